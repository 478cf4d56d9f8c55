// The operator console in a real browser (registered by test/web/dashboard.test.ts): the
// console at #/operator, signed in with the server's ADMIN_TOKEN (no user session), lists users
// with balances and usage, grants credits (checked on the user's own ledger through the API), and
// shows the queue: a greylisted address in the retry backlog with its next attempt. axe-clean at
// 1440 and 390 px, where the tables become cards and nothing scrolls sideways.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Browser, Page } from "playwright-core";
import {
  assertNoSidewaysScroll,
  axe,
  heading,
  newContext,
  open,
  screenshot,
  until,
} from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import { STACK_ADMIN_TOKEN, type Stack } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;

interface QueueJson {
  jobs: { retry_backlog: number; next_retry_at: string | null };
}

async function signInAsOperator(page: Page, token: string): Promise<void> {
  await page.getByLabel("Admin token").fill(token);
  await page.getByRole("button", { name: "Sign in to the console" }).click();
}

/** Registers the operator console tests (inside a describe of dashboard.test.ts). */
export function operatorConsole(): void {
  before(() => {
    stack = shared.stack;
    browser = shared.browser;
  });

  test("sign in with the admin token, see users and the retry backlog, grant credits", async (t) => {
    // A task whose address greylists (grey.test, WORLD in support/stack.ts) puts a job in the retry backlog.
    const busy = await stack.createUser(5);
    const task = await stack.api(busy.api_key, "POST", "/api/v1/tasks", { emails: ["gina@grey.test"] });
    assert.equal(task.status, 201);
    const queue = await until(
      "the greylisted address waits for its retry",
      async () => {
        const res = await stack.api<QueueJson>(STACK_ADMIN_TOKEN, "GET", "/api/v1/operator/queue");
        return res.json.jobs.retry_backlog >= 1 && res.json.jobs.next_retry_at !== null && res.json;
      },
      60_000,
      250,
    );
    assert.ok(queue.jobs.retry_backlog >= 1);
    const grantee = await stack.createUser(3);

    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    const page = await context.newPage();
    await open(page, stack.base, "#/operator");
    await heading(page, "Operator console");

    // A wrong token is refused with the API's message; the right one opens the console.
    await signInAsOperator(page, "not-the-token-0123456789");
    await page.getByRole("alert").filter({ hasText: "Could not sign in to the console" }).waitFor();
    await signInAsOperator(page, STACK_ADMIN_TOKEN);
    const queueCard = page.getByRole("region", { name: "Queue health" });
    await queueCard.getByText("Retry backlog").waitFor();
    const backlog = await queueCard
      .locator("dt", { hasText: "Retry backlog" })
      .locator("xpath=..")
      .locator("dd")
      .innerText();
    assert.match(backlog, /^[1-9]\d*\s+next /, backlog);
    await queueCard.getByRole("heading", { name: "Worker heartbeats" }).waitFor();
    await queueCard.getByRole("heading", { name: "Failing webhook deliveries" }).waitFor();

    // The token lives in this tab's sessionStorage only.
    assert.equal(
      await page.evaluate("window.sessionStorage.getItem('mailprobe.operator-token')"),
      STACK_ADMIN_TOKEN,
    );
    assert.equal(
      await page.evaluate("JSON.stringify(window.localStorage).includes('browser-suite-admin')"),
      false,
    );

    const users = page.getByRole("region", { name: "Users" });
    const row = users.getByRole("row").filter({ hasText: grantee.user_id });
    await row.waitFor();
    assert.match(await row.innerText(), /\b3\b/);
    const report = await axe(page, "operator");
    assert.deepEqual(report.serious, [], report.serious.join("\n"));
    await screenshot(page, "operator");

    await row.getByRole("button", { name: `Grant credits to ${grantee.user_id}` }).click();
    await users.getByLabel("Credits", { exact: true }).fill("25");
    await users.getByLabel("Reason", { exact: true }).fill("browser grant");
    await users.getByRole("button", { name: "Grant", exact: true }).click();
    await row.getByRole("cell", { name: "28", exact: true }).waitFor();
    // Said on screen, not only to a screen reader.
    await users
      .getByRole("status")
      .filter({ hasText: `Granted 25 credits to ${grantee.user_id}: balance 28.` })
      .waitFor();
    // The number input looks like the text inputs beside it.
    await row.getByRole("button", { name: `Grant credits to ${grantee.user_id}` }).click();
    const borderOf = (label: string): Promise<string> =>
      users.getByLabel(label, { exact: true }).evaluate(
        // Runs in the page (the suite's own types have no DOM).
        (el) =>
          (
            globalThis as unknown as { getComputedStyle(e: unknown): { borderTopColor: string } }
          ).getComputedStyle(el).borderTopColor,
      );
    const [amountBorder, reasonBorder] = [await borderOf("Credits"), await borderOf("Reason")];
    assert.equal(amountBorder, reasonBorder);
    await users.getByRole("button", { name: "Cancel", exact: true }).click();

    const ledger = await stack.api<{
      transactions: Array<{ amount: number; reason: string; metadata: { source?: string } }>;
    }>(grantee.api_key, "GET", "/api/v1/credits/transactions?limit=1");
    assert.deepEqual(ledger.json.transactions[0], {
      ...ledger.json.transactions[0],
      amount: 25,
      reason: "browser grant",
      metadata: { source: "operator" },
    });

    // Another tab has no token: it asks again.
    const other = await context.browser()!.newContext();
    t.after(() => other.close());
    const second = await other.newPage();
    await open(second, stack.base, "#/operator");
    await second.getByLabel("Admin token").waitFor();
  });

  test("at 390 px the tables are cards: axe-clean, nothing scrolls sideways", async (t) => {
    const context = await newContext(browser, 390);
    t.after(() => context.close());
    const page = await context.newPage();
    await open(page, stack.base, "#/operator");
    await heading(page, "Operator console");
    await signInAsOperator(page, STACK_ADMIN_TOKEN);
    const users = page.getByRole("region", { name: "Users" });
    await users
      .getByRole("button", { name: /^Grant credits to / })
      .first()
      .waitFor();
    await assertNoSidewaysScroll(page, "operator at 390 px");
    const report = await axe(page, "operator-390");
    assert.deepEqual(report.serious, [], report.serious.join("\n"));
    // Each user is a card: its cells stack, so the header row is out of sight.
    const display = await page.evaluate<string>(
      "getComputedStyle(document.querySelector('section[aria-labelledby=users-title] table.cards tbody tr')).display",
    );
    assert.equal(display, "block");
    await screenshot(page, "operator");
    await page.getByRole("button", { name: "Sign out of the console" }).click();
    await page.getByLabel("Admin token").waitFor();
    assert.equal(await page.evaluate("window.sessionStorage.getItem('mailprobe.operator-token')"), null);
  });
}
