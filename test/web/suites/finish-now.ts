// "Finish now" in a real browser (registered by test/web/dashboard.test.ts): a task whose last
// address waits for a greylisting server's retry says so with the time its retries end ("1 done;
// 1 waits for a retry, next try 10:05 AM, settled by 10:25 AM"), and "Finish now" completes it: the waiting address becomes
// `unknown` (greylisted) and its credit comes back, checked through the API outside the browser.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Browser } from "playwright-core";
import { heading, newContext, open, signIn, until } from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import type { Stack } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;

interface TaskJson {
  finished_at: string | null;
  metrics: {
    job_status: { pending: number; processing: number };
    verification_status: { valid: number; unknown: number };
    retries: { pending: number; settles_at: string | null };
  };
}

/** Registers the finish-now test (inside a describe of dashboard.test.ts). */
export function finishNow(): void {
  before(() => {
    stack = shared.stack;
    browser = shared.browser;
  });

  test("a task waiting only for a server's retry says until when, and Finish now completes it, refunded", async (t) => {
    const user = await stack.createUser(10);
    // grey.test greylists for an hour (WORLD in support/stack.ts): gina waits 5 min for a retry.
    const created = await stack.api<{ id: string }>(user.api_key, "POST", "/api/v1/tasks", {
      emails: ["ann@acme.test", "gina@grey.test"],
    });
    assert.equal(created.status, 201);
    const id = created.json.id;
    const waiting = await until(
      "only the greylisted address left, waiting for its retry",
      async () => {
        const res = await stack.api<TaskJson>(user.api_key, "GET", `/api/v1/tasks/${id}`);
        const m = res.json.metrics;
        return m.retries.pending === 1 && m.job_status.pending === 1 && m.job_status.processing === 0 && m;
      },
      60_000,
      250,
    );
    assert.ok(waiting.retries.settles_at, "the task's retries end at its window");

    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    const page = await context.newPage();
    await open(page, stack.base, `#/tasks/${id}`);
    await signIn(page, user.api_key);
    await heading(page, /.+/);
    const progress = page.getByRole("region", { name: "Progress" });
    // A window that ends on another day shows its date too ("until Nov 27, 2026, 12:33 AM"):
    // the run may fall within the window's length before midnight.
    await progress
      .getByText(
        /1 done; 1 waits for a retry(, next try (.+, )?\d{1,2}:\d{2}[^,]*)?, settled by (.+, )?\d{1,2}:\d{2}/,
      )
      .waitFor();

    await progress
      .getByRole("button", { name: "Finish now: 1 address is waiting for a server's retry" })
      .click();
    const dialog = page.getByRole("dialog", { name: "Finish this task now?" });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /1 address still waiting .* reported as unknown/);
    await dialog.getByRole("button", { name: "Finish now" }).click();
    await progress.getByText(/Finished /).waitFor();
    assert.equal(await progress.getByRole("button", { name: /Finish now/ }).count(), 0);

    const done = await stack.api<TaskJson>(user.api_key, "GET", `/api/v1/tasks/${id}`);
    assert.ok(done.json.finished_at);
    assert.deepEqual(
      [done.json.metrics.verification_status.valid, done.json.metrics.verification_status.unknown],
      [1, 1],
    );
    const jobs = await stack.api<{
      jobs: Array<{ email_address: string; email?: { unknown_reason: string } }>;
    }>(user.api_key, "GET", `/api/v1/tasks/${id}/jobs`);
    const gina = jobs.json.jobs.find((j) => j.email_address === "gina@grey.test");
    assert.equal(gina?.email?.unknown_reason, "greylisted");
    const balance = await stack.api<{ balance: number }>(user.api_key, "GET", "/api/v1/credits/balance");
    assert.equal(balance.json.balance, 9, "ann billed, gina's credit returned");
  });
}
