// Tables that fit their box at 1280 px (registered by test/web/dashboard.test.ts). The cut was
// reproduced on the tasks list, whose last column ("Not verified") sat 64 px past the table's box
// at 1280 (and at 1440: the page is 72rem wide either way), hidden with nothing to say so. The
// progress bar's own width (10em) was its column's least width. At 1280 px every table of the tasks
// list, a task's page and the keys page (long file and key names) now fits its box; narrower, a
// table scrolls inside its own box, which shows a shadow on the edge with columns beyond it.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { assertNoSidewaysScroll, heading, nav, newContext, open, signIn, until } from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import type { Stack, User } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;
let user: User;
let taskId: string;

const LONG = "Quarterly CRM export for the northern sales region with every contact and lead";

/** Each table in a scroll box on the page: how much wider it is than its box (0: it fits). */
export async function tableOverflows(page: Page): Promise<Array<{ table: string; overflow: number }>> {
  return page.evaluate(`[...document.querySelectorAll(".table-scroll")].map((box) => ({
    table: box.getAttribute("aria-label") ?? box.querySelector("caption")?.textContent ?? "a table",
    overflow: Math.max(0, box.scrollWidth - box.clientWidth),
  }))`);
}

/** Every table in a scroll box of the page (once one is drawn) fits its box, and the page its width. */
export async function assertTablesFit(page: Page, name: string): Promise<void> {
  const overflows = await until(`${name}: its tables drawn`, async () => {
    const found = await tableOverflows(page);
    return found.length > 0 && found;
  });
  const width = String(page.viewportSize()?.width ?? 0);
  assert.deepEqual(
    overflows.filter((o) => o.overflow > 0),
    [],
    `${name} at ${width} px: a table wider than its box`,
  );
  await assertNoSidewaysScroll(page, `${name} at ${width} px`);
}

/** Does the table's box draw the scroll cue (the edge shadows of styles.css .table-scroll)? */
export async function hasScrollCue(page: Page, region: string): Promise<boolean> {
  const box = `document.querySelector('.table-scroll[aria-label=${JSON.stringify(region)}]')`;
  const images = await page.evaluate<string>(`getComputedStyle(${box}).backgroundImage`);
  return (images.match(/radial-gradient/g) ?? []).length === 2;
}

/** A user with a list under a long file name, a JSON task and keys with long names. */
export async function seedWideData(s: Stack): Promise<{ user: User; taskId: string }> {
  const u = await s.createUser(100);
  for (const purpose of ["custom", "zapier"])
    await s.api(u.api_key, "POST", "/api/v1/api-keys", { name: `${LONG} (${purpose})`, purpose });
  const rows = Array.from({ length: 5 }, (_, i) => `someone.with.a.long.local.part.${String(i)}@acme.test`);
  const form = new FormData();
  const name = `${LONG.replace(/ /g, "-")}-2026-11-29.csv`;
  form.append("file", new Blob([`Email\n${rows.join("\n")}\n`], { type: "text/csv" }), name);
  const res = await fetch(`${s.base}/api/v1/tasks/batch/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${u.api_key}` },
    body: form,
    signal: AbortSignal.timeout(30_000),
  });
  assert.equal(res.status, 202);
  const id = ((await res.json()) as { task_id: string }).task_id;
  assert.equal((await s.api(u.api_key, "POST", "/api/v1/tasks", { emails: rows })).status, 201);
  return { user: u, taskId: id };
}

export function wideTables(): void {
  before(async () => {
    stack = shared.stack;
    browser = shared.browser;
    ({ user, taskId } = await seedWideData(stack));
  });

  test("1280x800: the tasks list, a task's page and the keys page fit their tables, long names and all", async (t) => {
    const context = await newContext(browser, 1280);
    t.after(() => context.close());
    const page = await context.newPage();
    await page.setViewportSize({ width: 1280, height: 800 });
    await open(page, stack.base);
    await signIn(page, user.api_key);
    await nav(page, "Tasks").click();
    await page.getByRole("region", { name: "Tasks table" }).waitFor();
    await assertTablesFit(page, "tasks");
    await page.evaluate(`window.location.hash = "#/tasks/${taskId}"`);
    await page.getByRole("region", { name: "Addresses table" }).waitFor();
    await assertTablesFit(page, "task");
    await nav(page, "API keys").click();
    await heading(page, "API keys");
    await assertTablesFit(page, "keys");
  });

  test("1024 px: the tasks table scrolls inside its box, which shows that more columns are to the side", async (t) => {
    const context = await newContext(browser, 1024);
    t.after(() => context.close());
    const page = await context.newPage();
    await open(page, stack.base);
    await signIn(page, user.api_key);
    await nav(page, "Tasks").click();
    await page.getByRole("region", { name: "Tasks table" }).waitFor();
    const [tasks] = await tableOverflows(page);
    assert.ok(tasks && tasks.overflow > 0, "the twelve columns do not fit 1024 px");
    await assertNoSidewaysScroll(page, "tasks at 1024 px");
    assert.ok(await hasScrollCue(page, "Tasks table"), "the box draws its edge shadows");
  });
}
