// The price on the button in a real browser (registered by test/web/dashboard.test.ts): choosing a
// file on the Lists page puts the server's quote (POST /api/v1/tasks/batch/upload/quote) on the
// primary button ("Verify 7 addresses for 5 credits (balance 50 → 45)"), at 1280 and 390 px,
// compared with the same quote fetched outside the browser, and nothing is created; a balance short
// of the price disables the button and says how short and where credits come from; a price still
// being asked disables it, a failed one does not lock the list out but is shown before anything is
// uploaded; a webhook URL the server refuses is refused before the list is uploaded.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Browser, Page, Route } from "playwright-core";
import { assertNoSidewaysScroll, heading, listsPageOf, nav, screenshot } from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import { STACK_ADMIN_TOKEN, type Stack, type User } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;

// 9 address rows (2 duplicates, 2 RFC-invalid, 2 sandbox) and 2 rows without an address:
// 7 distinct addresses, 5 credits (sandbox addresses are free).
const LIST_CSV = [
  "name,email,phone",
  "Alice,alice@acme.test,+1 555 0100",
  "Alice again,ALICE@acme.test,+1 555 0101",
  "Bob,bob@acme.test,",
  "No address,,+1 555 0102",
  "Junk,not an address,",
  "Dots,john..doe@acme.test,",
  "Lead,.lead@acme.test,",
  "Sandbox,valid@sandbox.mailprobe.invalid,",
  "Sandbox again,VALID@sandbox.mailprobe.invalid,",
  "Sandbox two,invalid@sandbox.mailprobe.invalid,",
  "Carol,carol@acme.test,",
  "",
].join("\n");

/** The widths checked: a laptop (1280 × 800) and a phone. */
const PRICE_WIDTHS = [1280, 390] as const;

interface Quote {
  credits_required: number;
  balance: number;
  unique_count: number;
  has_enough_credits: boolean;
}

/** The quote of the same upload, outside the browser. */
async function dryRun(key: string, fields: Record<string, string> = {}) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append("file", new Blob([LIST_CSV], { type: "text/csv" }), "contacts.csv");
  const res = await fetch(`${stack.base}/api/v1/tasks/batch/upload/quote`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: form,
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, json: (await res.json()) as Quote & { error?: { details?: unknown[] } } };
}

async function tasksOf(user: User): Promise<number> {
  const res = await stack.api<{ count: number }>(user.api_key, "GET", "/api/v1/tasks");
  assert.equal(res.status, 200);
  return res.json.count;
}

async function balanceOf(user: User): Promise<number> {
  return (await stack.api<{ balance: number }>(user.api_key, "GET", "/api/v1/credits/balance")).json.balance;
}

const listsPage = (t: { after: (fn: () => Promise<void>) => void }, user: User, width = 1440) =>
  listsPageOf(browser, stack.base, t, user.api_key, width);

const chooseList = (page: Page) =>
  page
    .getByLabel("File")
    .setInputFiles({ name: "contacts.csv", mimeType: "text/csv", buffer: Buffer.from(LIST_CSV) });

const button = (page: Page, name: string) => page.getByRole("button", { name, exact: true });

/** The button, scrolled to, is on screen whole: its label is not cut off at the viewport's edge. */
async function assertOnScreen(page: Page, name: string): Promise<void> {
  const start = button(page, name);
  await start.scrollIntoViewIfNeeded();
  const box = await start.boundingBox();
  const width = page.viewportSize()!.width;
  assert.ok(box && box.x >= 0 && box.x + box.width <= width, `the button at ${JSON.stringify(box)}`);
}

/** Registers the dry-run tests (inside a describe of dashboard.test.ts). */
export function dryRunPrice(): void {
  before(() => {
    stack = shared.stack;
    browser = shared.browser;
  });

  for (const width of PRICE_WIDTHS)
    test(`${String(width)} px: the price is on the button, as the API's dry run counts it; nothing is created`, async (t) => {
      const user = await stack.createUser(50);
      const api = await dryRun(user.api_key);
      assert.equal(api.status, 200);
      assert.deepEqual(
        [api.json.unique_count, api.json.credits_required, api.json.balance, api.json.has_enough_credits],
        [7, 5, 50, true],
      );
      const page = await listsPage(t, user, width);
      assert.equal(
        await button(page, "Start verification").isEnabled(),
        true,
        "before a file: the action, no price",
      );
      await chooseList(page);
      const label = "Verify 7 addresses for 5 credits (balance 50 → 45)";
      await button(page, label).waitFor();
      assert.equal(await button(page, label).isEnabled(), true);
      assert.match(
        await page.locator("#start-help").innerText(),
        /^7 distinct addresses in 11 rows: 2 duplicate rows, 2 rows skipped \(no address\), 2 addresses with invalid syntax \(billed, no mail server asked\), 2 sandbox addresses \(free\)\. Credits of unknown results are refunded/,
      );
      await assertOnScreen(page, label);
      await assertNoSidewaysScroll(page, `lists at ${String(width)} px`);
      await screenshot(page, "lists-price");
      assert.equal(await tasksOf(user), 0, "the dry run created no task");
      assert.equal(await balanceOf(user), 50, "nor reserved anything");
    });

  for (const width of PRICE_WIDTHS)
    test(`${String(width)} px: a balance short of the price disables Start, says how short and where credits come from`, async (t) => {
      const user = await stack.createUser(3);
      const api = await dryRun(user.api_key);
      assert.deepEqual(
        [api.json.credits_required, api.json.balance, api.json.has_enough_credits],
        [5, 3, false],
      );
      const page = await listsPage(t, user, width);
      await chooseList(page);
      const label = "Verify 7 addresses for 5 credits (balance 3, 2 short)";
      await button(page, label).waitFor();
      assert.equal(await button(page, label).isDisabled(), true);
      const reason = page.getByRole("status", { name: "Not enough credits" });
      const text = await reason.innerText();
      assert.match(
        text,
        /^2 credits short: this list needs 5 credits and your balance is 3, so it cannot start/,
      );
      assert.match(text, /mailprobe credits grant\): ask for 2 more credits, or upload a shorter list/);
      const credits = reason.getByRole("link", { name: "Credits page" });
      assert.equal(await credits.getAttribute("href"), "#/credits");
      await assertOnScreen(page, label);
      await assertNoSidewaysScroll(page, `lists at ${String(width)} px`);
      await screenshot(page, "lists-short");
      assert.equal(await tasksOf(user), 0);
      assert.equal(await balanceOf(user), 3);
    });

  test("credits granted while the list waits: the list survives a visit to Credits, the price is asked again, Start goes through", async (t) => {
    const user = await stack.createUser(3);
    const page = await listsPage(t, user, 1280);
    await chooseList(page);
    const short = page.getByRole("status", { name: "Not enough credits" });
    await short.getByRole("link", { name: "Credits page" }).click();
    await heading(page, "Credits");
    await nav(page, "Lists").click();
    await page.getByRole("region", { name: "Preview of contacts.csv" }).waitFor();
    await button(page, "Verify 7 addresses for 5 credits (balance 3, 2 short)").waitFor();

    const grant = await stack.api(
      STACK_ADMIN_TOKEN,
      "POST",
      `/api/v1/operator/users/${user.user_id}/grants`,
      {
        amount: 2,
        reason: "price on the button",
      },
    );
    assert.equal(grant.status, 201);
    await short.getByRole("button", { name: "Check the balance again" }).click();
    const label = "Verify 7 addresses for 5 credits (balance 5 → 0)";
    await button(page, label).click();
    await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/);
    await heading(page, "contacts.csv");
    assert.equal(await tasksOf(user), 1);
    assert.equal(await balanceOf(user), 0);
  });

  test("a price being asked disables Start; a failed one leaves it usable, and pressing it shows the price before uploading", async (t) => {
    const user = await stack.createUser(50);
    const page = await listsPage(t, user, 1280);
    // The dashboard asks POST /api/v1/tasks/batch/upload/quote: the quotes are held here.
    let held: ((route: Route) => void) | null = null;
    const caught = new Promise<Route>((resolve) => (held = resolve));
    await page.route("**/api/v1/tasks/batch/upload/quote", async (route) => {
      if (held) held(route);
      else await route.continue();
    });
    await chooseList(page);
    const route = await caught;
    held = null;
    assert.equal(await button(page, "Pricing the list…").isDisabled(), true);
    await route.abort("failed");

    const unpriced = button(page, "Start verification (price unavailable)");
    await unpriced.waitFor();
    assert.equal(await unpriced.isEnabled(), true, "a price that cannot be had does not lock the list out");
    const failure = page.getByRole("alert").filter({ hasText: "The list could not be priced" });
    assert.match(await failure.innerText(), /Could not reach the server/);

    // The first press asks again and puts the price on the button; nothing is uploaded yet.
    await unpriced.click();
    const label = "Verify 7 addresses for 5 credits (balance 50 → 45)";
    await button(page, label).waitFor();
    assert.match(page.url(), /#\/lists$/);
    assert.equal(await tasksOf(user), 0, "not uploaded without its price shown");
    await button(page, label).click();
    await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/);
    assert.equal(await balanceOf(user), 45);
  });

  test("a webhook URL the server refuses is refused before the list is uploaded", async (t) => {
    const user = await stack.createUser(50);
    const refusedUrl = "https://user:secret@hooks.example.com/mailprobe";
    const api = await dryRun(user.api_key, { webhook_url: refusedUrl });
    assert.equal(api.status, 400);
    const page = await listsPage(t, user);
    await chooseList(page);
    const label = "Verify 7 addresses for 5 credits (balance 50 → 45)";
    await button(page, label).waitFor();
    await page.getByLabel("Webhook URL").fill(refusedUrl);
    await button(page, label).click();
    const refusal = page.getByRole("alert").filter({ hasText: "The server refuses this webhook URL" });
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /it must not contain credentials/);
    assert.equal(await page.getByLabel("Webhook URL").getAttribute("aria-invalid"), "true");
    assert.match(page.url(), /#\/lists$/, "still on the Lists page");
    assert.equal(await tasksOf(user), 0, "nothing was uploaded");
    assert.equal(await balanceOf(user), 50);
    assert.equal(
      await button(page, label).isEnabled(),
      true,
      "the list's price stands: only the URL was refused",
    );

    // An accepted URL: checked again, then the upload goes through.
    await page.getByLabel("Webhook URL").fill("https://hooks.example.com/mailprobe");
    // As a person clicks: the field's change event (on the mousedown, as it loses focus) checks
    // the new URL while the button is held; the button keeps its price, its place and its
    // enabled state, or the click would be lost.
    await button(page, label).click({ delay: 400 });
    await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/);
    await heading(page, "contacts.csv");
    assert.equal(await tasksOf(user), 1);
    assert.equal(await balanceOf(user), 45);
  });
}
