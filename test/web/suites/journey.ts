// The dashboard in a real browser, end to end, as one user's session (registered by
// test/web/dashboard.test.ts, against its server and Chromium). Sign in → verify an address → upload a csv with extra columns → choose the email column →
// watch the task reach 100% → download csv, txt and xlsx and read them → the ledger rows and the
// usage chart's text alternative change → create, reveal and revoke a key → the webhook log, a
// test event and a redelivery → cancel a running task and delete it → sign out.
// The tests run in order and share the page: each starts where the previous ended.
// Times (first view, signed-in view) are printed as diagnostics, never asserted (house rule).
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, before, test } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { readXlsxBook } from "../../unit/files/helpers.ts";
import {
  download,
  heading,
  nav,
  newContext,
  open,
  signIn,
  storedSession,
  until,
} from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import type { Stack, User } from "../support/stack.ts";

let stack: Stack;
let user: User;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let taskId = "";
/** A receiver for the list's webhook (the shared server allows private addresses: WEBHOOK_ALLOW_PRIVATE). */
let receiver: Server;
let webhookUrl = "";
const deliveries: Array<{ headers: Record<string, unknown>; body: string }> = [];
/** The usage chart's text alternative before any spending: "N credits used and M credits granted …". */
let usageBefore = { used: 0, granted: 0 };

/**
 * The list of the upload: extra columns around two address columns. "Email" holds personal
 * addresses (auto-detection picks it by its header); the test chooses "Work address", so every
 * result proves which column the server read. One row has no work address (skipped).
 */
const CSV = [
  "Name,Email,Work address,Notes",
  'Ann Lee,ann.home@catchall.test,ann@acme.test,"VIP, since 2019"',
  "Bob Ray,bob.home@catchall.test,bob@acme.test,",
  "Zed Former,zed.home@catchall.test,zed@acme.test,left in March",
  "Sales desk,,sales@catchall.test,shared inbox",
  "Gone Corp,,someone@gone.test,domain expired",
  "Eve Blocked,,eve@blocked.test,",
  "Temp,,temp@mailinator.com,signed up with a throwaway",
  "No Work,nowork.home@catchall.test,,no work address",
  "",
].join("\n");

/** Work address → the status the mail world gives it. */
const EXPECTED: Record<string, string> = {
  "ann@acme.test": "valid",
  "bob@acme.test": "valid",
  "zed@acme.test": "invalid",
  "sales@catchall.test": "catchall",
  "someone@gone.test": "invalid",
  "eve@blocked.test": "unknown",
  "temp@mailinator.com": "disposable_domain",
};
const BILLED = Object.values(EXPECTED).filter((s) => s !== "unknown").length;

/** DESIGN.md §5's result columns; the list may grow (new fields), so a header must hold these in order. */
const RESULT_COLUMNS = [
  "email",
  "status",
  "is_role_based",
  "is_disposable",
  "has_mx_records",
  "has_reverse_dns",
  "domain_name",
  "host_name",
  "server_type",
  "is_catchall",
  "unknown_reason",
  "needs_physical_verify",
  "validated_at",
];
const ORIGINAL_COLUMNS = ["Name", "Email", "Work address", "Notes"];

/** The original columns first, then the result columns (email, status, … in DESIGN's order). */
function assertHeader(header: string[] | undefined, what: string): void {
  assert.ok(header, `${what}: a header row`);
  assert.deepEqual(header.slice(0, 4), ORIGINAL_COLUMNS, `${what}: the file's own columns first`);
  // The list has its own "Email" column, so the result columns carry a prefix (README: Downloads).
  assert.ok(
    header.slice(4).every((c) => c.startsWith("mailprobe_")),
    `${what}: prefixed result columns`,
  );
  const results = header.slice(4).map((c) => c.slice("mailprobe_".length));
  assert.deepEqual(
    results.filter((c) => RESULT_COLUMNS.includes(c)),
    RESULT_COLUMNS,
    `${what}: then the result columns (${results.join(",")})`,
  );
  assert.deepEqual(results.slice(0, 2), ["email", "status"]);
}

/** A minimal RFC 4180 reader (quotes, doubled quotes) for the downloaded csv. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (cell !== "" || row.length > 0) rows.push([...row, cell]);
  return rows;
}

/** The usage chart's accessible name, parsed: "Credits used … : 9 credits used and 101 credits granted over 30 days". */
async function usageNumbers(p: Page): Promise<{ used: number; granted: number; label: string }> {
  const chart = p.getByRole("img", { name: /Credits used and granted per day/ });
  await chart.waitFor();
  const label = (await chart.getAttribute("aria-label")) ?? "";
  const m = /([\d,]+) credits? used and ([\d,]+) credits? granted/.exec(label);
  assert.ok(m, `usage chart text alternative: ${label}`);
  const n = (s: string) => Number(s.replace(/,/g, ""));
  return { used: n(m[1]!), granted: n(m[2]!), label };
}

/** Registers the journey's hooks and tests (inside a describe of dashboard.test.ts). */
export function journey(): void {
  before(async () => {
    stack = shared.stack;
    browser = shared.browser;
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    webhookUrl = `http://127.0.0.1:${String((receiver.address() as { port: number }).port)}/hooks/mailprobe`;
    user = await stack.createUser(100);
    context = await newContext(browser, 1440);
    page = await context.newPage();
  });

  after(async () => {
    await context?.close().catch(() => {});
    await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
  });

  test("first view: the sign-in form, with a named key field", async () => {
    // Records, in the page's own clock (0 = navigation start), when the sign-in field appears.
    await page.addInitScript(`
    new MutationObserver(() => {
      if (window.__signInAt === undefined && document.getElementById("api-key")) window.__signInAt = performance.now();
      if (window.__signedInAt === undefined && /Verify an address/.test(document.querySelector("h1")?.textContent ?? ""))
        window.__signedInAt = performance.now();
    }).observe(document, { childList: true, subtree: true });
  `);
    await open(page, stack.base);
    await heading(page, "Sign in");
    const field = page.getByLabel("API key", { exact: true });
    await field.waitFor();
    assert.equal(await field.getAttribute("type"), "password", "the key is typed into a password field");
    const signInAt = await page.evaluate<number>("window.__signInAt");
    const fcp = await page.evaluate<number | null>(
      "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null",
    );
    console.log(
      `# time to first view (cold cache, navigation start → sign-in form in the DOM): ${signInAt.toFixed(0)} ms; first contentful paint ${fcp === null ? "n/a" : `${fcp.toFixed(0)} ms`}`,
    );
    assert.equal(await page.title(), "Sign in · mailprobe");
  });

  test("sign in with the user's key: the Verify page, a session in sessionStorage, no key kept", async () => {
    const started = performance.now();
    await signIn(page, user.api_key);
    await heading(page, "Verify an address");
    console.log(`# sign in (click → Verify page): ${(performance.now() - started).toFixed(0)} ms`);
    const session = await storedSession(page);
    assert.ok(session, "the session is stored");
    assert.equal(session.userId, user.user_id);
    assert.match(session.token, /^[\w-]+\.[\w-]+\.[\w-]+$/, "a JWT");
    const storage = await page.evaluate<string>("JSON.stringify({ ...sessionStorage, ...localStorage })");
    assert.ok(!storage.includes(user.api_key), "the API key is stored nowhere");
    for (const name of ["Verify", "Lists", "Tasks", "Credits", "API keys", "Webhooks"])
      assert.equal(await nav(page, name).count(), 1, `nav link ${name}`);
    assert.equal(await nav(page, "Verify").getAttribute("aria-current"), "page");

    // A reload keeps the session (same tab); time to the first signed-in view from navigation start.
    await page.reload({ waitUntil: "domcontentloaded" });
    await heading(page, "Verify an address");
    const signedInAt = await until("signed-in view timestamp", () =>
      page.evaluate<number | undefined>("window.__signedInAt"),
    );
    console.log(
      `# time to first signed-in view (reload, warm cache, navigation start → Verify page): ${signedInAt.toFixed(0)} ms`,
    );

    // The usage before anything is spent (the opening grant only).
    await nav(page, "Credits").click();
    await heading(page, "Credits");
    usageBefore = await usageNumbers(page);
    assert.deepEqual(
      { used: usageBefore.used, granted: usageBefore.granted },
      { used: 0, granted: 100 },
      "the opening grant only",
    );
    await nav(page, "Verify").click();
    await heading(page, "Verify an address");
  });

  test("verify an address: the result card says valid, costs 1 credit; an unknown user is invalid", async () => {
    const email = page.getByLabel("Email address");
    await email.fill("carol@acme.test");
    await page.getByRole("button", { name: "Verify", exact: true }).click();
    const card = page.getByRole("article", { name: "carol@acme.test" });
    await card.waitFor();
    const text = await card.innerText();
    assert.match(text, /\bValid\b/);
    assert.match(text, /mail server accepted this mailbox/);
    assert.match(text, /Cost:\s*1 credit\. Balance: 99 credits\./);
    assert.match(text, /Mail server\s*mx\.acme\.test/i, "the MX host (labels are upper-cased by CSS)");

    await email.fill("nobody@acme.test");
    await page.getByRole("button", { name: "Verify", exact: true }).click();
    const second = page.getByRole("article", { name: "nobody@acme.test" });
    await second.waitFor();
    const secondText = await second.innerText();
    assert.match(secondText, /\bInvalid\b/);
    assert.match(secondText, /Cost:\s*1 credit\. Balance: 98 credits\./);
  });

  test("upload a csv with extra columns, choose the email column, watch the task reach 100%", async () => {
    await nav(page, "Lists").click();
    await heading(page, "Verify a list");
    await page.getByText("Your balance: 98 credits").waitFor();
    await page.getByLabel("File").setInputFiles({
      name: "people.csv",
      mimeType: "text/csv",
      buffer: Buffer.from(CSV),
    });
    // The preview, and the column chosen by the header "Email".
    const preview = page.getByRole("region", { name: "Preview of people.csv" });
    await preview.waitFor();
    assert.match(await preview.innerText(), /ann@acme\.test/);
    const column = page.getByLabel("Email column");
    assert.equal(await column.inputValue(), "1", "auto-detection takes the column named Email (B)");
    assert.match(await page.getByText(/^Detected:/).innerText(), /B: Email/);
    await column.selectOption({ label: "C: Work address" });
    assert.equal(await column.inputValue(), "2");
    await page.getByLabel("Webhook URL").fill(webhookUrl);

    // The price on the button is the work addresses' (column C), asked again when the column changed.
    await page
      .getByRole("button", { name: "Verify 7 addresses for 7 credits (balance 98 → 91)", exact: true })
      .click();
    await page.waitForURL(/#\/tasks\/[0-9a-f-]{36}$/);
    taskId = /#\/tasks\/([0-9a-f-]{36})$/.exec(page.url())![1]!;
    await heading(page, "people.csv");
    const flash = await page.getByRole("status").filter({ hasText: "people.csv:" }).innerText();
    assert.match(flash, /7 addresses queued/, flash);

    // The page polls every 2 s; the mail world answers at once, so it finishes within seconds.
    const progress = page.getByRole("progressbar", { name: "Verification progress" });
    await until(
      "the task reaches 100%",
      async () => (await progress.getAttribute("value")) === "100",
      60_000,
    );
    const section = page.getByRole("region", { name: "Progress" });
    await until("the task shows Finished", async () => /Finished/.test(await section.innerText()), 15_000);
    const progressText = await section.innerText();
    assert.match(progressText, /100 %/);
    assert.match(progressText, /7 of 7 addresses done/);
    assert.match(
      progressText,
      /From people\.csv: 7 rows with an address, 7 distinct addresses, 0 duplicates, 1 row skipped/,
    );
    assert.ok(progressText.includes(webhookUrl), "the task names its webhook");

    // The counts by status, from the status bars' table.
    const breakdown = page.getByRole("region", { name: "Results by status" });
    const table = breakdown.getByRole("region", { name: "Addresses by result status (table)" });
    const counts: Record<string, string> = {};
    // The first row is the header.
    for (const row of (await table.getByRole("row").all()).slice(1)) {
      const [status, n] = (await row.innerText()).split("\t").map((c) => c.trim());
      counts[status!] = n ?? "";
    }
    assert.deepEqual(counts, {
      Valid: "2",
      Invalid: "2",
      "Catch-all": "1",
      "Invalid syntax": "0",
      Disposable: "1",
      Unknown: "1",
    });

    // The webhook typed into the form was called once the list finished, signed.
    const delivery = await until("the task.completed delivery", async () => deliveries[0], 30_000);
    const event = JSON.parse(delivery.body) as { type: string; data: { task_id: string } };
    assert.equal(event.type, "task.completed");
    assert.equal(event.data.task_id, taskId);
    assert.match(String(delivery.headers["webhook-signature"]), /^v1,/);
  });

  test("download csv, txt and xlsx: each file read back", async () => {
    assert.ok(taskId, "the upload test made a task");
    const downloads = page.getByRole("region", { name: "Download results" });

    const csv = await download(page, downloads.getByRole("button", { name: "Download CSV" }));
    assert.match(csv.name, /\.csv$/);
    const rows = parseCsv(csv.data.toString("utf8").replace(/^\uFEFF/, "")).filter((r) => r.join("") !== "");
    assertHeader(rows[0], "csv");
    const byWork = new Map(rows.slice(1).map((r) => [r[2]!, r]));
    for (const [address, status] of Object.entries(EXPECTED)) {
      const r = byWork.get(address);
      assert.ok(r, `csv row of ${address}`);
      assert.equal(r[4], address, "the email column is the chosen one");
      assert.equal(r[5], status, `status of ${address}`);
    }
    assert.equal(byWork.get("ann@acme.test")![3], "VIP, since 2019", "a quoted extra cell kept");
    assert.equal(byWork.get("ann@acme.test")![0], "Ann Lee");

    const txt = await download(page, downloads.getByRole("button", { name: "Download TXT" }));
    assert.match(txt.name, /\.txt$/);
    const lines = txt.data
      .toString("utf8")
      .split(/\r?\n/)
      .filter((l) => l !== "");
    assert.deepEqual(
      [...lines].sort(),
      Object.entries(EXPECTED)
        .map(([a, s]) => `${a},${s}`)
        .sort(),
      "txt: email,status per line",
    );

    const xlsx = await download(page, downloads.getByRole("button", { name: "Download XLSX" }));
    assert.match(xlsx.name, /\.xlsx$/);
    assert.equal(xlsx.data.subarray(0, 2).toString("latin1"), "PK", "a zip");
    const [sheet] = readXlsxBook(xlsx.data);
    assert.ok(sheet, "one sheet at least");
    const cells = Array.from(sheet.rows, (r) =>
      Array.from(r ?? [], (c) => (c === undefined ? "" : String(c.value))),
    );
    assertHeader(cells[0], "xlsx");
    const xlsxStatus = new Map(cells.slice(1).map((r) => [r[4], r[5]]));
    for (const [address, status] of Object.entries(EXPECTED))
      assert.equal(xlsxStatus.get(address), status, address);
    await page
      .getByRole("status")
      .filter({ hasText: /^Saved .*\.xlsx\.$/ })
      .waitFor();
  });

  test("credits: the ledger shows the list's reservation and refund, the usage chart moved", async () => {
    await nav(page, "Credits").click();
    await heading(page, "Credits");
    const balance = page.getByRole("region", { name: "Balance" });
    const expectedBalance = 100 - 2 - BILLED;
    await until("the balance", async () =>
      (await balance.innerText()).includes(`${expectedBalance} credits`),
    );

    const ledger = page.getByRole("region", { name: "Ledger table" });
    await ledger.waitFor();
    const rowOf = (what: string) => ledger.getByRole("row").filter({ hasText: what });
    const reserve = await rowOf("Reserved for a list").innerText();
    assert.match(reserve, /[-−]7\b/, reserve);
    assert.match(reserve, /Dashboard/);
    const refund = await rowOf("Refund of unknown results").innerText();
    assert.match(refund, /\+1\b/, refund);
    assert.equal(await rowOf("Realtime verification").count(), 2);
    // The reservation links to its task.
    assert.equal(
      await rowOf("Reserved for a list").getByRole("link", { name: "view task" }).getAttribute("href"),
      `#/tasks/${taskId}`,
    );

    const usage = await usageNumbers(page);
    assert.equal(usage.used - usageBefore.used, 2 + 7, `used: ${usage.label}`);
    assert.equal(usage.granted - usageBefore.granted, 1, `granted (the refund): ${usage.label}`);
    // The same numbers in the chart's table: today's row.
    const region = page.getByRole("region", { name: "Usage per day" });
    await region.getByText("Show as table").click();
    const table = region.getByRole("region", { name: /^Credits used and granted per day.*\(table\)$/ });
    const rows = await table.getByRole("row").all();
    const today = (await rows[rows.length - 1]!.innerText()).split("\t").map((c) => c.trim());
    assert.deepEqual(today.slice(1), ["9", "101"], `today's row: ${today.join(" | ")}`);
  });

  test("API keys: create a named Zapier key, reveal it, revoke it with confirmation", async () => {
    await nav(page, "API keys").click();
    await heading(page, "API keys");
    await page.getByLabel("Name").fill("CI sync");
    await page.getByLabel("Purpose").selectOption({ label: "Zapier" });
    await page.getByRole("button", { name: "Create key" }).click();
    const created = page.getByRole("status").filter({ hasText: "Key “CI sync” created." });
    await created.waitFor();
    const key = (await created.locator("code").innerText()).trim();
    assert.ok(key.length >= 20, `a key: ${key}`);
    assert.equal((await stack.api(key, "GET", "/api/v1/credits/balance")).status, 200, "the new key works");

    const table = page.getByRole("region", { name: "API keys table" });
    const row = table.getByRole("row").filter({ hasText: "CI sync" });
    await row.waitFor();
    assert.match(await row.innerText(), /zapier/);
    assert.doesNotMatch(await row.innerText(), new RegExp(key), "listed by prefix, not in full");
    await row.getByRole("button", { name: "Reveal" }).click();
    await until("the revealed key", async () => (await row.innerText()).includes(key));
    assert.equal(await row.getByRole("button", { name: "Hide" }).count(), 1);

    await row.getByRole("button", { name: "Revoke" }).click();
    const dialog = page.getByRole("dialog", { name: "Revoke “CI sync”?" });
    await dialog.waitFor();
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    await dialog.waitFor({ state: "hidden" });
    await until("the row says Revoked", async () => /Revoked/.test(await row.innerText()));
    assert.equal(await row.getByRole("button", { name: "Revoke" }).count(), 0, "no action left on it");
    assert.equal(await row.getByRole("button", { name: "Reveal" }).count(), 0);
    const refused = await stack.api(key, "GET", "/api/v1/credits/balance");
    assert.equal(refused.status, 401, "a revoked key no longer works");
    // The session's own key is untouched.
    assert.match(await table.getByRole("row").filter({ hasText: "this session" }).innerText(), /Active/);
  });

  test("webhooks: the log shows the list's delivery; a test event and a redelivery arrive, signed", async () => {
    await nav(page, "Webhooks").click();
    await heading(page, "Webhooks");
    const { json } = await stack.api<{ secret: string }>(user.api_key, "GET", "/api/v1/webhooks/secret");
    const signer = new Webhook(json.secret);
    const log = page.getByRole("region", { name: "Deliveries table" });
    const taskRow = log.getByRole("row").filter({ hasText: "task.completed" });
    await taskRow.waitFor();
    assert.match(await taskRow.innerText(), /Delivered[\s\S]*HTTP 204/);
    const seen = deliveries.length;
    const arrived = (type: string) =>
      deliveries.slice(seen).find((d) => (JSON.parse(d.body) as { type: string }).type === type);

    await page.getByLabel("Send a test event to").fill(webhookUrl);
    await page.getByRole("button", { name: "Send test event" }).click();
    const pingRow = log.getByRole("row").filter({ hasText: "ping" });
    await until("the ping shows Delivered", async () => /Delivered/.test(await pingRow.innerText()), 30_000);
    const ping = await until("the ping at the receiver", async () => arrived("ping"), 30_000);
    const headers = ping.headers as Record<string, string>;
    assert.deepEqual(signer.verify(ping.body, headers), JSON.parse(ping.body), "signed with the secret");

    await taskRow.getByRole("button", { name: "Redeliver" }).click();
    const again = await until(
      "the redelivery at the receiver",
      async () => arrived("task.completed"),
      30_000,
    );
    assert.equal(again.headers["webhook-id"], deliveries[0]!.headers["webhook-id"], "the same webhook-id");
    signer.verify(again.body, again.headers as Record<string, string>);
    await until(
      "the row counts 2 attempts",
      async () => (await taskRow.getByRole("cell").nth(1).innerText()).trim() === "2",
    );
  });

  test("cancel a running task with confirmation (the pending address refunded), then delete it", async () => {
    const created = await stack.api<{ id: string }>(user.api_key, "POST", "/api/v1/tasks", {
      emails: ["gina@grey.test", "ann@acme.test"],
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id;
    type TaskJson = { metrics: { job_status: { pending: number; completed: number } } };
    // ann@ is verified at once; gina@ is greylisted and waits 5 minutes for its retry.
    await until(
      "one address done, one waiting",
      async () => {
        const t = await stack.api<TaskJson>(user.api_key, "GET", `/api/v1/tasks/${id}`);
        return t.json.metrics.job_status.completed === 1 && t.json.metrics.job_status.pending === 1;
      },
      30_000,
    );
    const balance = async () =>
      (await stack.api<{ balance: number }>(user.api_key, "GET", "/api/v1/credits/balance")).json.balance;
    const before = await balance();
    await page.evaluate(`location.hash = "#/tasks/${id}"`);
    await heading(page, "List of 2 addresses");

    const stop = page.getByRole("region", { name: "Stop this task" });
    await stop.getByRole("button", { name: "Cancel task", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Cancel this task?" });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /1 address not verified yet will be dropped and refunded/);
    // The way out is not a second "Cancel" beside "Cancel task".
    assert.deepEqual(await dialog.getByRole("button").allInnerTexts(), [
      "Stop and refund",
      "Keep it running",
    ]);
    await dialog.getByRole("button", { name: "Stop and refund", exact: true }).click();
    await dialog.waitFor({ state: "hidden" });
    const progress = page.getByRole("region", { name: "Progress" });
    await until("the task says Cancelled", async () => /Cancelled/.test(await progress.innerText()));
    // The bar shows what was verified, not the API's progress (which counts dropped addresses).
    const { json: cancelled } = await stack.api<{
      metrics: { total_email_addresses: number; job_status: { completed: number; failed: number } };
    }>(user.api_key, "GET", `/api/v1/tasks/${id}`);
    const verified = cancelled.metrics.job_status.completed + cancelled.metrics.job_status.failed;
    const bar = progress.getByRole("progressbar", { name: "Verified before the cancellation" });
    assert.equal(
      Number(await bar.getAttribute("value")),
      (verified / cancelled.metrics.total_email_addresses) * 100,
    );
    assert.equal(await balance(), before + 1, "the waiting address's credit came back");
    const ledger = await stack.api<{ transactions: Array<{ reason: string | null }> }>(
      user.api_key,
      "GET",
      "/api/v1/credits/transactions?limit=5",
    );
    assert.ok(ledger.json.transactions.some((t) => t.reason === "task_cancelled_refund"));

    const remove = page.getByRole("region", { name: "Delete this task" });
    await remove.getByRole("button", { name: "Delete task", exact: true }).click();
    const confirm = page.getByRole("dialog", { name: "Delete this task's data?" });
    await confirm.getByRole("button", { name: "Delete task", exact: true }).click();
    await heading(page, "Tasks");
    await page
      .getByRole("status")
      .filter({ hasText: "Deleted the results of List of 2 addresses." })
      .waitFor();
    assert.equal((await stack.api(user.api_key, "GET", `/api/v1/tasks/${id}`)).status, 404);
    assert.equal(await balance(), before + 1, "deleting moves no credit");
  });

  test("sign out: back to the sign-in form, the token gone from sessionStorage", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await heading(page, "Sign in");
    await page.getByRole("status").filter({ hasText: "You are signed out." }).waitFor();
    assert.equal(await storedSession(page), null);
    assert.equal(
      await page.getByRole("navigation", { name: "Main" }).count(),
      0,
      "no navigation when signed out",
    );
    // Reloading does not bring the session back.
    await page.reload({ waitUntil: "domcontentloaded" });
    await heading(page, "Sign in");
    assert.equal(await storedSession(page), null);
  });
}
