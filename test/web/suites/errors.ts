// The error paths in a real browser (registered by test/web/dashboard.test.ts): what the user sees
// when the key is wrong, when there are no credits (402), when the file is not a list (client check
// and the server's 400), and when the session ends (the server refuses an expired token, the
// session's key is revoked, the expiry time passes with the tab open). Every message shown is
// compared with the API's own answer to the same request, fetched outside the browser.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { SignJWT } from "jose";
import type { Browser, BrowserContext, Page } from "playwright-core";
import {
  heading,
  nav,
  newContext,
  open,
  setStoredSession,
  signIn,
  storedSession,
  until,
} from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import type { Stack, User } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;
let rich: User;
let broke: User;

/** A fresh tab (its own sessionStorage) on the sign-in form, closed after the test. */
async function freshPage(t: { after: (fn: () => Promise<void>) => void }): Promise<Page> {
  const context: BrowserContext = await newContext(browser, 1440);
  t.after(() => context.close());
  const page = await context.newPage();
  await open(page, stack.base);
  await heading(page, "Sign in");
  return page;
}

/** The text of the alert under `title` ("The list was not accepted", …). */
async function alertText(page: Page, title: string): Promise<string> {
  const alert = page.getByRole("alert").filter({ hasText: title });
  await alert.waitFor();
  return alert.innerText();
}

async function uploadMessage(
  key: string,
  name: string,
  body: string,
): Promise<{ status: number; message: string }> {
  const form = new FormData();
  form.append("file", new Blob([body], { type: "text/csv" }), name);
  const res = await fetch(`${stack.base}/api/v1/tasks/batch/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}` },
    body: form,
    signal: AbortSignal.timeout(30_000),
  });
  const json = (await res.json()) as { error?: { message?: string } };
  return { status: res.status, message: json.error?.message ?? "" };
}

/** The id of the user's first key (the one `users create` printed). */
async function firstKeyId(user: User): Promise<string> {
  const keys = await stack.api<{ api_keys: { id: string; prefix: string }[] }>(
    user.api_key,
    "GET",
    "/api/v1/api-keys",
  );
  const ids = keys.json.api_keys.filter((k) => user.api_key.startsWith(k.prefix)).map((k) => k.id);
  assert.equal(ids.length, 1, "the first key is listed");
  return ids[0]!;
}

/** Registers the error-path hooks and tests (inside a describe of dashboard.test.ts). */
export function errorPaths(): void {
  before(async () => {
    stack = shared.stack;
    browser = shared.browser;
    [rich, broke] = await Promise.all([stack.createUser(50), stack.createUser(0)]);
  });

  test("a wrong key: the sign-in form shows the API's 401 message and stays", async (t) => {
    const page = await freshPage(t);
    const wrong = "mp_live_this-key-does-not-exist-0123456789";
    const api = await stack.api(wrong, "POST", "/api/v1/auth/session");
    assert.equal(api.status, 401);
    await page.getByLabel("API key", { exact: true }).fill(wrong);
    await page.getByRole("button", { name: "Sign in" }).click();
    const text = await alertText(page, "Could not sign in");
    assert.ok(text.includes(api.json.error!.message), `shown: ${text}; API: ${api.json.error!.message}`);
    assert.equal(await storedSession(page), null);
    assert.equal(await page.getByRole("navigation", { name: "Main" }).count(), 0);

    // An integration key (Zapier) may not open a dashboard session: the API's 403 message.
    const zapier = await stack.api<{ key: string }>(rich.api_key, "POST", "/api/v1/api-keys", {
      name: "zap",
      purpose: "zapier",
    });
    assert.equal(zapier.status, 201);
    const forbidden = await stack.api(zapier.json.key, "POST", "/api/v1/auth/session");
    assert.equal(forbidden.status, 403);
    await page.getByLabel("API key", { exact: true }).fill(zapier.json.key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await until("the 403 message", async () =>
      (await alertText(page, "Could not sign in")).includes(forbidden.json.error!.message),
    );
    assert.equal(await storedSession(page), null);
  });

  test("no credits: verifying shows the 402 message; a list's Start is off before any 402", async (t) => {
    const page = await freshPage(t);
    await signIn(page, broke.api_key);
    await heading(page, "Verify an address");
    const api = await stack.api(broke.api_key, "POST", "/api/v1/verify", { email: "ann@acme.test" });
    assert.equal(api.status, 402);
    assert.equal(api.json.error?.code, "INSUFFICIENT_CREDITS");
    await page.getByLabel("Email address").fill("bob@acme.test");
    await page.getByRole("button", { name: "Verify", exact: true }).click();
    const text = await alertText(page, "The address could not be verified");
    assert.ok(text.includes(api.json.error.message), `shown: ${text}; API: ${api.json.error.message}`);
    assert.equal(await page.getByRole("article").count(), 0, "no result card");

    await nav(page, "Lists").click();
    await heading(page, "Verify a list");
    const csv = "email\nann@acme.test\nbob@acme.test\n";
    const upload = await uploadMessage(broke.api_key, "two.csv", csv);
    assert.equal(upload.status, 402);
    await page
      .getByLabel("File")
      .setInputFiles({ name: "two.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    await page.getByRole("region", { name: "Preview of two.csv" }).waitFor();
    // The upload's 402 is not reached: the price on Start says how short the balance is, and
    // Start is disabled (test/web/suites/dry-run.ts has the rest).
    const start = page.getByRole("button", {
      name: "Verify 2 addresses for 2 credits (balance 0, 2 short)",
      exact: true,
    });
    await start.waitFor();
    assert.equal(await start.isDisabled(), true);
    const short = await page.getByRole("status", { name: "Not enough credits" }).innerText();
    assert.match(short, /^2 credits short: this list needs 2 credits and your balance is 0/);
    assert.match(page.url(), /#\/lists$/, "still on the Lists page");
  });

  test("the verify form: input that is not an address is refused in place with the API's reason; a quoted local part goes through", async (t) => {
    const page = await freshPage(t);
    await signIn(page, rich.api_key);
    await heading(page, "Verify an address");
    const api = await stack.api<{ error: { details: { field: string; reason: string }[] } }>(
      rich.api_key,
      "POST",
      "/api/v1/verify",
      { email: "bob" },
    );
    assert.equal(api.status, 400);
    const reason = api.json.error.details[0]!.reason;
    const field = page.getByLabel("Email address");
    await field.fill("bob");
    await page.getByRole("button", { name: "Verify", exact: true }).click();
    const shown = await page.getByRole("alert").filter({ hasText: "The email address" }).innerText();
    assert.ok(shown.includes(reason), `shown: ${shown}; API: ${reason}`);
    assert.equal(await field.getAttribute("aria-invalid"), "true");
    assert.equal(await page.getByRole("article").count(), 0, "no request, no result card");

    // The browser's own type=email check refuses this; the API takes it.
    const quoted = '"john doe"@catchall.test';
    await field.fill(quoted);
    assert.equal(await field.getAttribute("aria-invalid"), "false", "typing clears the message");
    await page.getByRole("button", { name: "Verify", exact: true }).click();
    await page.getByRole("article").getByRole("heading", { name: quoted }).waitFor();
  });

  test("a malformed hash (#/%) is the not-found page, and the app keeps working", async (t) => {
    const page = await freshPage(t);
    await signIn(page, rich.api_key);
    await heading(page, "Verify an address");
    const thrown: string[] = [];
    page.on("pageerror", (e) => thrown.push(e.message));
    await page.evaluate(`location.hash = "#/%"`);
    await heading(page, "Page not found");
    assert.match(await page.locator("main code").innerText(), /^\/%$/);
    assert.deepEqual(thrown, []);
    await nav(page, "Tasks").click();
    await heading(page, "Tasks");
  });

  test("an invalid file: a .pdf is refused before upload; a csv without any address gets the API's 400", async (t) => {
    const page = await freshPage(t);
    await signIn(page, rich.api_key);
    await nav(page, "Lists").click();
    await heading(page, "Verify a list");

    await page.getByLabel("File").setInputFiles({
      name: "contacts.pdf",
      mimeType: "application/pdf",
      buffer: Buffer.from("%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF\n"),
    });
    const problem = page.getByRole("alert").filter({ hasText: "contacts.pdf" });
    await problem.waitFor();
    assert.match(await problem.innerText(), /is not a \.txt, \.csv or \.xlsx file/);
    assert.equal(await page.getByRole("button", { name: "Start verification" }).isDisabled(), true);
    const pdfApi = await uploadMessage(rich.api_key, "contacts.pdf", "%PDF-1.7\n");
    assert.equal(pdfApi.status, 400, "the server refuses it too");

    const csv = "name,phone\nAnn,555-0100\nBob,555-0101\n";
    const api = await uploadMessage(rich.api_key, "phones.csv", csv);
    assert.equal(api.status, 400);
    await page
      .getByLabel("File")
      .setInputFiles({ name: "phones.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    await page.getByRole("region", { name: "Preview of phones.csv" }).waitFor();
    assert.match(
      await page.getByText(/^Nothing detected:/).innerText(),
      /no column of the first rows holds an address/,
    );
    // Its dry run is refused too: no price, said under Start, which still sends the list.
    const start = page.getByRole("button", { name: "Start verification (price unavailable)", exact: true });
    await start.waitFor();
    const before = await alertText(page, "The server would refuse this list as it is");
    assert.ok(before.includes(api.message), `shown: ${before}; API: ${api.message}`);
    await start.click();
    const text = await alertText(page, "The list was not accepted");
    assert.ok(text.includes(api.message), `shown: ${text}; API: ${api.message}`);
    const balance = await stack.api<{ balance: number }>(rich.api_key, "GET", "/api/v1/credits/balance");
    assert.equal(balance.json.balance, 50, "nothing reserved");
  });

  test("an expired session: the server refuses the token, the sign-in form says why", async (t) => {
    // A session token exactly as the server issues it (HS256 with its JWT_SECRET, bound to the key
    // that opened it) but issued 16 minutes ago with the default 15-minute lifetime. Waiting for a
    // real expiry would take at least SESSION_TTL_SECONDS' minimum (60 s); a token with a broken
    // signature would test forgery, not expiry. The stored expiry is left in the future, as when
    // the browser's clock is behind the server's: only the server's 401 ends the session.
    const page = await freshPage(t);
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ api_key_id: await firstKeyId(rich) })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(rich.user_id)
      .setIssuedAt(now - 960)
      .setExpirationTime(now - 60)
      .sign(new TextEncoder().encode(stack.jwtSecret));
    const probe = await fetch(`${stack.base}/api/v1/credits/balance`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(30_000),
    });
    assert.equal(probe.status, 401, "the server refuses the expired token");
    await setStoredSession(page, {
      token,
      expiresAt: new Date(Date.now() + 10 * 60_000).toISOString(),
      userId: rich.user_id,
      apiKeyId: null,
    });
    // The user comes back to the tab on the Credits page (a load: the stored session is read at start).
    await open(page, stack.base, "#/credits");
    await page.reload({ waitUntil: "domcontentloaded" });
    await heading(page, "Sign in");
    const notice = await page.getByRole("alert").filter({ hasText: "session expired" }).innerText();
    assert.match(notice, /Your session expired, sign in again/);
    assert.equal(await storedSession(page), null, "the dead token is dropped");
    // Signing in again returns to the page the user was on.
    await signIn(page, rich.api_key);
    await heading(page, "Credits");
  });

  test("a session whose key is revoked elsewhere ends at the next request", async (t) => {
    const page = await freshPage(t);
    const second = await stack.api<{ key: string; id: string }>(rich.api_key, "POST", "/api/v1/api-keys", {
      name: "laptop",
      purpose: "custom",
    });
    assert.equal(second.status, 201);
    await signIn(page, second.json.key);
    await nav(page, "Tasks").click();
    await heading(page, "Tasks");
    const revoked = await stack.api(rich.api_key, "DELETE", `/api/v1/api-keys/${second.json.id}`);
    assert.ok(revoked.status === 200 || revoked.status === 204, `revoke: ${revoked.status}`);
    // The next request ends it: this click's, or the Tasks page's own refresh if that comes
    // first (then the navigation is already gone and the click has nothing to do).
    await nav(page, "Credits")
      .click({ timeout: 3_000 })
      .catch(() => {});
    await heading(page, "Sign in");
    await page.getByRole("alert").filter({ hasText: "Your session expired, sign in again." }).waitFor();
    assert.equal(await storedSession(page), null);
  });

  test("a session that reaches its expiry with the tab open: the sign-in form says why", async (t) => {
    const page = await freshPage(t);
    await signIn(page, rich.api_key);
    await heading(page, "Verify an address");
    const session = await storedSession(page);
    assert.ok(session);
    // The same session, told by the server it ends in 2 s (the tab's timer is what ends it).
    await setStoredSession(page, { ...session, expiresAt: new Date(Date.now() + 2_000).toISOString() });
    await page.reload({ waitUntil: "domcontentloaded" });
    await heading(page, "Verify an address");
    await page
      .getByRole("alert")
      .filter({ hasText: "Your session expired, sign in again." })
      .waitFor({ timeout: 10_000 });
    await heading(page, "Sign in");
    assert.equal(await storedSession(page), null);
  });

  test("a tab reloaded after its session expired: the sign-in form says why, the token is dropped", async (t) => {
    const page = await freshPage(t);
    await signIn(page, rich.api_key);
    await heading(page, "Verify an address");
    const session = await storedSession(page);
    assert.ok(session);
    // The tab was closed by the browser's session restore, or reloaded, after the expiry.
    await setStoredSession(page, { ...session, expiresAt: new Date(Date.now() - 1_000).toISOString() });
    await page.reload({ waitUntil: "domcontentloaded" });
    await heading(page, "Sign in");
    await page
      .getByRole("alert")
      .filter({ hasText: "Your session expired, sign in again." })
      .waitFor({ timeout: 3_000 });
    assert.equal(await storedSession(page), null);
  });
}
