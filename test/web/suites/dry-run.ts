// Issue 21 item 3, the price before the upload in a real browser (registered by
// test/web/dashboard.test.ts): choosing a file on the Lists page shows what the server's dry run
// answers ("About 5 credits, you have 3"), compared with the same dry run fetched outside the
// browser, and nothing is created; a webhook URL the server refuses is refused before the list
// is uploaded.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import { heading, nav, newContext, open, signIn } from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import type { Stack, User } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;

// 9 address rows (2 duplicates, 2 RFC-invalid, 2 sandbox) and 2 rows without an address.
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

interface Quote {
  credits_required: number;
  balance: number;
  unique_count: number;
  has_enough_credits: boolean;
}

/** The dry run of the same upload, outside the browser. */
async function dryRun(key: string, fields: Record<string, string> = {}) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append("file", new Blob([LIST_CSV], { type: "text/csv" }), "contacts.csv");
  const res = await fetch(`${stack.base}/api/v1/tasks/batch/upload?dry_run=true`, {
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

async function listsPage(t: { after: (fn: () => Promise<void>) => void }, user: User): Promise<Page> {
  const context = await newContext(browser, 1440);
  t.after(() => context.close());
  const page = await context.newPage();
  await open(page, stack.base);
  await signIn(page, user.api_key);
  await nav(page, "Lists").click();
  await heading(page, "Verify a list");
  return page;
}

const chooseList = (page: Page) =>
  page
    .getByLabel("File")
    .setInputFiles({ name: "contacts.csv", mimeType: "text/csv", buffer: Buffer.from(LIST_CSV) });

/** Registers the dry-run tests (inside a describe of dashboard.test.ts). */
export function dryRunPrice(): void {
  before(() => {
    stack = shared.stack;
    browser = shared.browser;
  });

  test("choosing a file shows the server's price and the balance before Start; nothing is created", async (t) => {
    const user = await stack.createUser(3);
    const api = await dryRun(user.api_key);
    assert.equal(api.status, 200);
    assert.deepEqual(
      [api.json.credits_required, api.json.balance, api.json.has_enough_credits],
      [5, 3, false],
    );
    const page = await listsPage(t, user);
    await chooseList(page);
    const price = page.getByRole("status", { name: "Price" });
    await price.getByText("About 5 credits, you have 3.").waitFor();
    const text = await price.innerText();
    assert.match(text, /2 credits short/);
    assert.match(text, /7 distinct addresses in 11 rows: 2 duplicate rows, 2 rows skipped \(no address\)/);
    assert.equal(await page.getByRole("button", { name: "Start verification" }).isDisabled(), false);
    assert.equal(await tasksOf(user), 0, "the dry run created no task");
    assert.equal(await balanceOf(user), 3, "nor reserved anything");
  });

  test("a webhook URL the server refuses is refused before the list is uploaded", async (t) => {
    const user = await stack.createUser(50);
    const refusedUrl = "https://user:secret@hooks.example.com/mailprobe";
    const api = await dryRun(user.api_key, { webhook_url: refusedUrl });
    assert.equal(api.status, 400);
    const page = await listsPage(t, user);
    await chooseList(page);
    await page.getByRole("status", { name: "Price" }).getByText("About 5 credits, you have 50.").waitFor();
    await page.getByLabel("Webhook URL").fill(refusedUrl);
    await page.getByRole("button", { name: "Start verification" }).click();
    const refusal = page.getByRole("alert").filter({ hasText: "The server refuses this webhook URL" });
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /it must not contain credentials/);
    assert.equal(await page.getByLabel("Webhook URL").getAttribute("aria-invalid"), "true");
    assert.match(page.url(), /#\/lists$/, "still on the Lists page");
    assert.equal(await tasksOf(user), 0, "nothing was uploaded");
    assert.equal(await balanceOf(user), 50);

    // An accepted URL: the price again, then the upload goes through.
    await page.getByLabel("Webhook URL").fill("https://hooks.example.com/mailprobe");
    // As a person clicks: the field's change event (on the mousedown, as it loses focus) prices
    // the list again while the button is held, and the button must still be under the pointer.
    await page.getByRole("button", { name: "Start verification" }).click({ delay: 400 });
    await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/);
    await heading(page, "contacts.csv");
    assert.equal(await tasksOf(user), 1);
    assert.equal(await balanceOf(user), 45);
  });
}
