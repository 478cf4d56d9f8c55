// Every page of the dashboard at a phone width (375 px) and a laptop width (1440 px)
// (registered by test/web/dashboard.test.ts),
// with data on it (a finished list, ledger rows, two keys): axe-core finds no serious or
// critical violation (the others are printed), and a full-page screenshot goes to
// docs/screenshots/<page>-<width>.png, the pictures the README shows.
// No page scrolls sideways, at either width nor at 390 px (each phone-width page is
// checked again at 390 px, with axe), and what the tables used to cut off at that width (a task's
// progress, a key's Reveal and Revoke, the notes of an address) lies inside the viewport. The
// finished task's page also shows its summary, its cost, a search and the clean-list downloads.
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { relative } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import {
  assertNoSidewaysScroll,
  axe,
  download,
  heading,
  nav,
  newContext,
  open,
  pricedStart,
  screenshot,
  signIn,
  until,
  WIDTHS,
  type AxeReport,
} from "../support/browser.ts";
import { ROOT } from "../support/build.ts";
import { shared } from "../support/shared.ts";
import type { Stack, User } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;
let user: User;
let taskId = "";
const reports: AxeReport[] = [];

const LIST = [
  "Name,Company,Email,Phone",
  "Ann Lee,Acme,ann@acme.test,555-0100",
  "Bob Ray,Acme,bob@acme.test,555-0101",
  "Carol Diaz,Acme,carol@acme.test,",
  "Zed Former,Acme,zed@acme.test,",
  "Sales,Catch-all Inc,sales@catchall.test,555-0199",
  "Hi,Catch-all Inc,hello@catchall.test,",
  "Gone,Gone Corp,someone@gone.test,",
  "Eve,Blocked Ltd,eve@blocked.test,",
  "Temp,,temp@mailinator.com,",
  "",
].join("\n");

/** A common phone width, checked on top of the narrow width of WIDTHS. */
const PHONE = 390;

/** What must stay on screen at a phone width, per page: it was cut off inside a scrolling table. */
type Visible = (page: Page) => Array<[string, Locator]>;

async function assertInView(page: Page, what: string, target: Locator): Promise<void> {
  const width = page.viewportSize()?.width ?? 0;
  const box = await target.boundingBox();
  assert.ok(box, `${what} is shown`);
  const right = box.x + box.width;
  assert.ok(
    box.x >= 0 && right <= width + 0.5,
    `${what} at ${String(width)} px lies at x ${box.x.toFixed(0)} to ${right.toFixed(0)}`,
  );
}

async function axeClean(page: Page, name: string): Promise<void> {
  const width = page.viewportSize()?.width ?? 0;
  const report = await axe(page, `${name} @${String(width)}`);
  reports.push(report);
  assert.deepEqual(report.serious, [], `${name} at ${String(width)} px: serious axe violations`);
}

/** Waits until requests and the lazily drawn charts have settled, then checks and pictures. */
async function checkPage(page: Page, name: string, shot = true, visible?: Visible): Promise<void> {
  await page.waitForLoadState("networkidle", { timeout: 5_000 }).catch(() => {});
  await delay(150);
  const size = page.viewportSize() ?? { width: 0, height: 0 };
  await axeClean(page, name);
  if (shot) {
    const file = await screenshot(page, name);
    console.log(`# ${relative(ROOT, file)}: ${(statSync(file).size / 1024).toFixed(0)} KiB`);
  }
  await assertNoSidewaysScroll(page, name);
  if (size.width >= 600) return;
  await page.setViewportSize({ width: PHONE, height: size.height });
  try {
    await delay(150);
    await assertNoSidewaysScroll(page, name);
    for (const [what, target] of visible?.(page) ?? []) await assertInView(page, `${name}: ${what}`, target);
    await axeClean(page, name);
  } finally {
    await page.setViewportSize(size);
  }
}

/** Registers the pages' hooks and tests (inside a describe of dashboard.test.ts). */
export function everyPage(): void {
  before(async () => {
    stack = shared.stack;
    browser = shared.browser;
    user = await stack.createUser(250);
    // Data for the pages, made the way an integration makes it: a Zapier key, a realtime
    // verification and a list through the API.
    const zap = await stack.api<{ key: string }>(user.api_key, "POST", "/api/v1/api-keys", {
      name: "CRM sync",
      purpose: "zapier",
    });
    assert.equal(zap.status, 201);
    assert.equal(
      (await stack.api(zap.json.key, "POST", "/api/v1/verify", { email: "dan@acme.test" })).status,
      200,
    );
    const form = new FormData();
    form.append("file", new Blob([LIST], { type: "text/csv" }), "customers.csv");
    const res = await fetch(`${stack.base}/api/v1/tasks/batch/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${zap.json.key}` },
      body: form,
      signal: AbortSignal.timeout(30_000),
    });
    assert.equal(res.status, 202);
    taskId = ((await res.json()) as { task_id: string }).task_id;
    await until(
      "the seeded list finishes",
      async () =>
        (await stack.api<{ finished_at: string | null }>(user.api_key, "GET", `/api/v1/tasks/${taskId}`)).json
          .finished_at !== null,
      60_000,
      200,
    );
  });

  after(() => {
    const others = reports.flatMap((r) => r.others.map((o) => `${r.page}: ${o}`));
    console.log(
      `# axe: ${String(reports.length)} page states checked; minor/moderate findings: ${String(others.length)}`,
    );
    for (const o of [...new Set(others)]) console.log(`#   ${o}`);
  });

  for (const width of WIDTHS) {
    let context: BrowserContext | undefined;
    let page: Page;
    after(() => context?.close());

    test(`${String(width)} px: sign-in`, async () => {
      context = await newContext(browser, width);
      page = await context.newPage();
      await open(page, stack.base);
      await heading(page, "Sign in");
      await checkPage(page, "sign-in");
      await signIn(page, user.api_key);
    });

    test(`${String(width)} px: verify, with a result`, async () => {
      await heading(page, "Verify an address");
      // An address of neither the seeded list nor the other width: a paid, valid result.
      const address = width < 600 ? "erin@acme.test" : "fay@acme.test";
      await page.getByLabel("Email address").fill(address);
      await page.getByRole("button", { name: "Verify", exact: true }).click();
      await page.getByRole("article", { name: address }).waitFor();
      await checkPage(page, "verify");
    });

    test(`${String(width)} px: lists, with a file's preview`, async () => {
      await nav(page, "Lists").click();
      await heading(page, "Verify a list");
      await page
        .getByLabel("File")
        .setInputFiles({ name: "customers.csv", mimeType: "text/csv", buffer: Buffer.from(LIST) });
      const preview = page.getByRole("region", { name: "Preview of customers.csv" });
      await preview.waitFor();
      await pricedStart(page).waitFor();
      // The email column shows whole inside the preview, also where the table scrolls sideways.
      const shown = await preview.evaluate((el) => {
        const th = el.querySelector("th.chosen")!.getBoundingClientRect();
        const box = el.getBoundingClientRect();
        return th.left >= box.left - 1 && th.right <= box.right + 1;
      });
      assert.ok(shown, `the email column is in view at ${String(width)} px`);
      // Its caption stays put while the table scrolls to that column.
      await assertInView(page, "the preview's caption", page.locator("#preview-caption"));
      await checkPage(page, "lists");
    });

    test(`${String(width)} px: tasks`, async () => {
      await nav(page, "Tasks").click();
      await heading(page, "Tasks");
      await page.getByRole("link", { name: "customers.csv" }).waitFor();
      await checkPage(page, "tasks", true, (p) => [
        ["the list's progress", p.getByRole("progressbar", { name: "Progress of customers.csv" })],
      ]);
      // On a laptop the whole table fits, up to its last column.
      if (width >= 600)
        await assertInView(
          page,
          "tasks: the last column",
          page.getByRole("columnheader", { name: "Not verified" }),
        );
    });

    test(`${String(width)} px: a finished task`, async () => {
      await page.getByRole("link", { name: "customers.csv" }).click();
      await heading(page, "customers.csv");
      await page.getByRole("region", { name: "Addresses by result status (table)" }).waitFor();
      await page.getByRole("img", { name: /Addresses per day, by status/ }).waitFor();
      await page.getByText(/^Charged/).waitFor();
      assert.match(page.url(), new RegExp(`#/tasks/${taskId}$`));
      await checkPage(page, "task", true, (p) => [
        [
          "an address's notes",
          p.getByRole("region", { name: "Addresses table" }).locator("td.notes").first(),
        ],
        ["a clean-list download", p.getByRole("button", { name: "Download deliverable only" })],
      ]);
    });

    test(`${String(width)} px: the task's summary, cost, search and clean lists`, async () => {
      const jobsOf = async (query: string) =>
        (
          await stack.api<{ jobs: Array<{ email_address: string }>; count: number }>(
            user.api_key,
            "GET",
            `/api/v1/tasks/${taskId}/jobs?limit=100${query}`,
          )
        ).json;
      const task = (
        await stack.api<{ metrics: { verification_status: Record<string, number> } }>(
          user.api_key,
          "GET",
          `/api/v1/tasks/${taskId}`,
        )
      ).json;
      const v = task.metrics.verification_status;
      const count = (...statuses: string[]) => statuses.reduce((n, s) => n + (v[s] ?? 0), 0);
      const verified = count(
        "valid",
        "invalid",
        "catchall",
        "invalid_syntax",
        "disposable_domain",
        "unknown",
      );
      const breakdown = page.getByRole("region", { name: "Results by status" });
      const groups: Array<[string, number]> = [
        ["Deliverable", count("valid")],
        ["Risky", count("catchall", "unknown")],
        ["Undeliverable", count("invalid", "invalid_syntax", "disposable_domain")],
      ];
      for (const [group, n] of groups) {
        const text = await breakdown.locator(`.verdict-${group.toLowerCase()}`).innerText();
        assert.match(text, new RegExp(`${group}\\s+${String(n)}\\s+\\d+ %`), `${group}: ${text}`);
      }
      assert.equal(
        groups.reduce((n, [, c]) => n + c, 0),
        verified,
        "the three groups hold every result",
      );

      // The cost is the task's own ledger rows, read back from the API.
      const ledger = (
        await stack.api<{ transactions: Array<{ amount: number }> }>(
          user.api_key,
          "GET",
          `/api/v1/credits/transactions?task_id=${taskId}&limit=100`,
        )
      ).json.transactions;
      const charged = -ledger.filter((t) => t.amount < 0).reduce((n, t) => n + t.amount, 0);
      const refunded = ledger.filter((t) => t.amount > 0).reduce((n, t) => n + t.amount, 0);
      assert.ok(charged > 0, "the list reserved credits");
      // innerText carries the labels' text-transform (uppercase), hence "i".
      const cost = await page.getByRole("region", { name: "Cost" }).innerText();
      assert.match(cost, new RegExp(`Charged\\s+${String(charged)} credits?`, "i"));
      assert.match(cost, new RegExp(`Refunded\\s+${String(refunded)} credits?`, "i"));
      assert.match(cost, new RegExp(`Cost\\s+${String(charged - refunded)} credits?`, "i"));

      // Search: the addresses of one domain, counted.
      const addresses = page.getByRole("region", { name: "Addresses", exact: true });
      await addresses.getByLabel("Search addresses").fill("@ACME.test");
      await addresses.getByRole("button", { name: "Search", exact: true }).click();
      const acme = (await jobsOf("&q=acme.test")).jobs.map((j) => j.email_address).sort();
      assert.ok(acme.length > 0);
      await addresses.getByText(`${String(acme.length)} addresses contain “@ACME.test”.`).waitFor();
      const table = addresses.getByRole("region", { name: "Addresses table" });
      const shown = await table.locator("tbody th").allInnerTexts();
      assert.deepEqual(shown.map((s) => s.trim()).sort(), acme);

      // The clean lists hold exactly the valid (and catch-all) addresses.
      const downloads = page.getByRole("region", { name: "Download results" });
      for (const [button, query] of [
        ["Download deliverable only", ["valid"]],
        ["Download deliverable + catch-all", ["valid", "catchall"]],
      ] as const) {
        const expected = (await Promise.all(query.map((s) => jobsOf(`&status=${s}`))))
          .flatMap((r) => r.jobs.map((j) => j.email_address))
          .sort();
        const file = await download(page, downloads.getByRole("button", { name: button }));
        // Named for what it holds: never the whole list's name.
        assert.match(file.name, new RegExp(`-results-${query.join("-")}\\.csv$`), file.name);
        const rows = file.data
          .toString("utf8")
          .replace(/^\uFEFF/, "")
          .split(/\r?\n/)
          .filter((l) => l !== "")
          .slice(1);
        const found = rows.map((r) => expected.find((a) => r.split(",").includes(a)) ?? r).sort();
        assert.deepEqual(found, expected, `${button}: one row per address`);
      }
    });

    test(`${String(width)} px: credits`, async () => {
      await nav(page, "Credits").click();
      await heading(page, "Credits");
      await page.getByRole("img", { name: /Credits used and granted per day/ }).waitFor();
      await page.getByRole("region", { name: "Ledger table" }).waitFor();
      const usage = await page.getByRole("region", { name: "Usage per day" }).innerText();
      assert.doesNotMatch(usage, /used − granted/i, "the net in words, not a formula");
      // innerText carries the labels' text-transform (uppercase), hence /i.
      assert.match(
        usage,
        /Your balance in this period\s+(Up|Down) [\d,]+ credits?: more (granted than used|used than granted)/i,
      );
      // The opening credits are an operator's grant, and say so.
      await page
        .getByRole("region", { name: "Ledger table" })
        .getByText("Granted by the operator: opening credits")
        .waitFor();
      await checkPage(page, "credits", true, (p) => [
        ["a ledger row's change", p.getByRole("region", { name: "Ledger table" }).locator("td.num").first()],
      ]);
    });

    test(`${String(width)} px: API keys, and the revoke dialog`, async () => {
      await nav(page, "API keys").click();
      await heading(page, "API keys");
      const row = page
        .getByRole("region", { name: "API keys table" })
        .getByRole("row")
        .filter({ hasText: "CRM sync" });
      await row.waitFor();
      await checkPage(page, "keys", true, () => [
        ["Reveal", row.getByRole("button", { name: "Reveal" })],
        ["Revoke", row.getByRole("button", { name: "Revoke" })],
      ]);
      await row.getByRole("button", { name: "Revoke" }).click();
      const dialog = page.getByRole("dialog", { name: "Revoke “CRM sync”?" });
      await dialog.waitFor();
      await checkPage(page, "keys-revoke-dialog", false);
      await dialog.getByRole("button", { name: "Cancel" }).click();
      await dialog.waitFor({ state: "hidden" });
    });

    test(`${String(width)} px: webhooks`, async () => {
      await nav(page, "Webhooks").click();
      await heading(page, "Webhooks");
      await page.getByRole("button", { name: "Show secret" }).waitFor();
      await checkPage(page, "webhooks");
    });
  }
}
