// Issue 12: every page of the dashboard at a phone width (375 px) and a laptop width (1440 px)
// (registered by test/web/dashboard.test.ts),
// with data on it (a finished list, ledger rows, two keys): axe-core finds no serious or
// critical violation (the others are printed), and a full-page screenshot goes to
// docs/screenshots/<page>-<width>.png, the pictures the README shows.
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { relative } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { after, before, test } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import {
  axe,
  heading,
  nav,
  newContext,
  open,
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

/** Waits until requests and the lazily drawn charts have settled, then checks and pictures. */
async function checkPage(page: Page, name: string, shot = true): Promise<void> {
  await page.waitForLoadState("networkidle", { timeout: 5_000 }).catch(() => {});
  await delay(150);
  const width = page.viewportSize()?.width ?? 0;
  const report = await axe(page, `${name} @${String(width)}`);
  reports.push(report);
  assert.deepEqual(report.serious, [], `${name} at ${String(width)} px: serious axe violations`);
  if (shot) {
    const file = await screenshot(page, name);
    console.log(`# ${relative(ROOT, file)}: ${(statSync(file).size / 1024).toFixed(0)} KiB`);
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
      await page.getByRole("region", { name: "Preview of customers.csv" }).waitFor();
      await checkPage(page, "lists");
    });

    test(`${String(width)} px: tasks`, async () => {
      await nav(page, "Tasks").click();
      await heading(page, "Tasks");
      await page.getByRole("link", { name: "customers.csv" }).waitFor();
      await checkPage(page, "tasks");
    });

    test(`${String(width)} px: a finished task`, async () => {
      await page.getByRole("link", { name: "customers.csv" }).click();
      await heading(page, "customers.csv");
      await page.getByRole("img", { name: /Addresses by result status/ }).waitFor();
      await page.getByRole("img", { name: /Addresses per day, by status/ }).waitFor();
      assert.match(page.url(), new RegExp(`#/tasks/${taskId}$`));
      await checkPage(page, "task");
    });

    test(`${String(width)} px: credits`, async () => {
      await nav(page, "Credits").click();
      await heading(page, "Credits");
      await page.getByRole("img", { name: /Credits used and granted per day/ }).waitFor();
      await page.getByRole("region", { name: "Ledger table" }).waitFor();
      await checkPage(page, "credits");
    });

    test(`${String(width)} px: API keys, and the revoke dialog`, async () => {
      await nav(page, "API keys").click();
      await heading(page, "API keys");
      const row = page
        .getByRole("region", { name: "API keys table" })
        .getByRole("row")
        .filter({ hasText: "CRM sync" });
      await row.waitFor();
      await checkPage(page, "keys");
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
