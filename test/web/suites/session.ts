// The dashboard session in a real browser (registered by test/web/dashboard.test.ts): a session
// shared by two tabs of one browser and renewed past its first expiry while the user is active; an
// idle session left to end; sign-out in one tab ending both; a session at its SESSION_MAX_HOURS cap
// ending with the chosen list and its preview still there after signing in again. Also: a task
// page left polling on screen past the token's lifetime stays signed in and updating, the
// same page in a hidden tab lets the session end, and a one-time sign-in link signs in once.
//
// The first token of each test is minted here exactly as the server issues it (HS256 with its
// JWT_SECRET, bound to the user's key and to a session the server opened, `auth_time` = sign-in)
// but with a lifetime of seconds:
// SESSION_TTL_SECONDS cannot go below 60 s, and the stack is shared by every suite. Its renewals
// are the server's own (POST /api/v1/auth/session/refresh, 15 minutes each).
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { decodeJwt, SignJWT } from "jose";
import type { Browser, Page, Request } from "playwright-core";
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
let user: User;
let keyId: string;

const HOUR_S = 3600;

async function mint(
  lifetimeSeconds: number,
  signedInSecondsAgo = 0,
): Promise<{ token: string; exp: number }> {
  // A session the server holds (auth/sessions.ts): opened with the key, its id taken for the
  // token minted here, so renewals and sign-out act on a real session row.
  const opened = await stack.api<{ token: string }>(user.api_key, "POST", "/api/v1/auth/session");
  const sid = decodeJwt(opened.json.token).sid;
  const now = Math.floor(Date.now() / 1000);
  const exp = now + lifetimeSeconds;
  const token = await new SignJWT({ api_key_id: keyId, auth_time: now - signedInSecondsAgo, sid, gen: 0 })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(user.user_id)
    .setIssuedAt(now)
    .setExpirationTime(exp)
    .sign(new TextEncoder().encode(stack.jwtSecret));
  return { token, exp };
}

/** Opens the dashboard in `page` signed in with `token`, as a tab that signed in itself. */
async function openWith(
  page: Page,
  minted: { token: string; exp: number },
  renewableUntilS: number,
): Promise<void> {
  await open(page, stack.base);
  await heading(page, "Sign in");
  await setStoredSession(page, {
    token: minted.token,
    expiresAt: new Date(minted.exp * 1000).toISOString(),
    userId: user.user_id,
    apiKeyId: keyId,
    renewableUntil: new Date(renewableUntilS * 1000).toISOString(),
  });
  await page.reload({ waitUntil: "domcontentloaded" });
  await heading(page, "Verify an address");
}

/** A task that stays running: grey.test greylists for an hour (WORLD in support/stack.ts). */
async function runningTask(): Promise<string> {
  const created = await stack.api<{ id: string }>(user.api_key, "POST", "/api/v1/tasks", {
    emails: ["gina@grey.test"],
  });
  assert.equal(created.status, 201);
  return created.json.id;
}

/** The task page's own polls (GET /api/v1/tasks/{id}): when each was answered, and how. */
function watchPolls(page: Page, taskId: string): Array<{ at: number; status: number }> {
  const polls: Array<{ at: number; status: number }> = [];
  page.on("response", (r) => {
    if (r.request().method() === "GET" && r.url().endsWith(`/api/v1/tasks/${taskId}`))
      polls.push({ at: Date.now(), status: r.status() });
  });
  return polls;
}

/** Goes to the task page the way a link would (no pointer or key event: no user activity). */
async function showTask(page: Page, taskId: string): Promise<void> {
  await page.evaluate(`window.location.hash = "#/tasks/${taskId}"`);
  await page.getByRole("heading", { level: 2, name: "Progress" }).waitFor();
}

const balanceWith = (page: Page, token: string): Promise<number> =>
  page.evaluate(
    `fetch("/api/v1/credits/balance", { headers: { authorization: "Bearer ${token}" } }).then((r) => r.status)`,
  );

export function sessionSuite(): void {
  before(async () => {
    stack = shared.stack;
    browser = shared.browser;
    user = await stack.createUser(20);
    const keys = await stack.api<{ api_keys: { id: string; prefix: string }[] }>(
      user.api_key,
      "GET",
      "/api/v1/api-keys",
    );
    const ids = keys.json.api_keys.filter((k) => user.api_key.startsWith(k.prefix)).map((k) => k.id);
    assert.equal(ids.length, 1, "the first key is listed");
    keyId = ids[0]!;
  });

  test("two tabs share the session; activity in one renews it for both past its first expiry; sign-out ends both", async (t) => {
    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    // 30 s: time for a busy machine to open both tabs before the window opens at 20 s.
    const minted = await mint(30);
    const first = await context.newPage();
    await openWith(first, minted, minted.exp + 12 * HOUR_S);

    // A second tab of the same browser joins without a key.
    const second = await context.newPage();
    await open(second, stack.base);
    await heading(second, "Verify an address");
    assert.equal((await storedSession(second))?.token, minted.token, "the second tab got the token");
    const storage = await second.evaluate<string>("JSON.stringify({ ...sessionStorage, ...localStorage })");
    assert.ok(!storage.includes(user.api_key), "no API key stored");
    assert.equal(await first.evaluate<number>("localStorage.length"), 0, "nothing in localStorage");

    // The user works in the second tab only; the first stays idle.
    await nav(second, "Credits").click();
    await heading(second, "Credits");
    const renewed = await until(
      "a renewed token in both tabs",
      async () => {
        const [a, b] = [await storedSession(first), await storedSession(second)];
        return a && b && a.token !== minted.token && a.token === b.token ? a : undefined;
      },
      40_000,
      250,
    );
    assert.ok(
      Date.parse(renewed.expiresAt) > Date.now() + 10 * 60_000,
      `the renewal lasts SESSION_TTL_SECONDS (${renewed.expiresAt})`,
    );

    // Past the first token's expiry: the server refuses it, both tabs go on with the renewal.
    const wait = minted.exp * 1000 + 1_000 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    assert.equal(await balanceWith(first, minted.token), 401, "the first token has expired");
    assert.equal(await balanceWith(first, renewed.token), 200);
    await nav(first, "Tasks").click();
    await heading(first, "Tasks");
    await nav(second, "Verify").click();
    await heading(second, "Verify an address");
    await first.reload({ waitUntil: "domcontentloaded" });
    await heading(first, "Tasks");

    // Signing out in one tab signs out the other; reloading it does not bring the session back.
    await first.getByRole("button", { name: "Sign out" }).click();
    await heading(second, "Sign in");
    await second.getByRole("status").filter({ hasText: "You are signed out." }).waitFor();
    await second.reload({ waitUntil: "domcontentloaded" });
    await second.getByLabel("API key", { exact: true }).waitFor();
    assert.equal(await storedSession(second), null);
  });

  test("an idle tab does not renew: its session ends at the expiry", async (t) => {
    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    const page = await context.newPage();
    const refreshes: string[] = [];
    page.on("request", (r: Request) => {
      if (r.url().endsWith("/api/v1/auth/session/refresh")) refreshes.push(r.url());
    });
    const minted = await mint(8);
    await openWith(page, minted, minted.exp + 12 * HOUR_S);
    await page
      .getByRole("alert")
      .filter({ hasText: "Your session expired, sign in again." })
      .waitFor({ timeout: 20_000 });
    assert.deepEqual(refreshes, [], "no renewal without activity");
  });

  test("at SESSION_MAX_HOURS the session ends with a notice; the chosen list and its preview survive the sign-in", async (t) => {
    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    const page = await context.newPage();
    // Signed in 12 h minus 15 s ago: this token ends at the cap, so no renewal can extend it.
    const minted = await mint(15, 12 * HOUR_S - 15);
    await openWith(page, minted, minted.exp);
    await nav(page, "Lists").click();
    await heading(page, "Verify a list");
    const csv = "name,email,phone\nAnn,ann@acme.test,+1 555 6330\nBob,bob@acme.test,+1 555 6331\n";
    await page
      .getByLabel("File")
      .setInputFiles({ name: "phones.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    await page.getByRole("region", { name: "Preview of phones.csv" }).waitFor();

    await page
      .getByRole("alert")
      .filter({ hasText: "Your session reached its 12-hour limit, sign in again." })
      .waitFor({ timeout: 25_000 });
    const help = await page.locator("#api-key-help").innerText();
    assert.match(
      help,
      /a session of 15 minutes, renewed while you use the dashboard or watch a task on screen, for up to 12 hours/,
    );

    await signIn(page, user.api_key);
    await heading(page, "Verify a list");
    const region = page.getByRole("region", { name: "Preview of phones.csv" });
    await region.waitFor();
    assert.match(await region.innerText(), /ann@acme\.test/);
    assert.equal(
      await page.evaluate<string | null>("document.getElementById('list-file').files?.[0]?.name ?? null"),
      "phones.csv",
      "the file input holds the kept file",
    );
  });

  test("a task page left polling on screen past the token's lifetime stays signed in and keeps updating", async (t) => {
    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    const page = await context.newPage();
    const taskId = await runningTask();
    const polls = watchPolls(page, taskId);
    // 12 s: the renewal window opens at 8 s and holds two of the page's polls (every 2 s).
    const minted = await mint(12);
    await openWith(page, minted, minted.exp + 12 * HOUR_S);
    await showTask(page, taskId);

    // Nobody touches the page; wait past the first token's expiry.
    const wait = minted.exp * 1000 + 4_500 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const stored = await storedSession(page);
    assert.ok(stored && stored.token !== minted.token, "the polling page renewed its session");
    assert.equal(
      await page.getByRole("heading", { level: 1, name: "Sign in" }).count(),
      0,
      "still signed in",
    );
    await page.getByRole("heading", { level: 2, name: "Progress" }).waitFor();
    const later = polls.filter((p) => p.at > minted.exp * 1000);
    assert.ok(later.length >= 2, `the page still polls after the first token's expiry (${later.length})`);
    assert.deepEqual(
      later.map((p) => p.status),
      later.map(() => 200),
      "every poll after the expiry answered",
    );
  });

  test("the same task page in a hidden tab does not keep the session: it ends at the expiry", async (t) => {
    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    // A background tab: the page reads `hidden` (headless Chromium shows every page).
    await context.addInitScript(
      "Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' })",
    );
    const page = await context.newPage();
    const refreshes: string[] = [];
    page.on("request", (r: Request) => {
      if (r.url().endsWith("/api/v1/auth/session/refresh")) refreshes.push(r.url());
    });
    const taskId = await runningTask();
    const minted = await mint(8);
    await openWith(page, minted, minted.exp + 12 * HOUR_S);
    await page.evaluate(`window.location.hash = "#/tasks/${taskId}"`);
    await page
      .getByRole("alert")
      .filter({ hasText: "Your session expired, sign in again." })
      .waitFor({ timeout: 25_000 });
    assert.deepEqual(refreshes, [], "no renewal from a hidden tab");
  });

  test("a one-time sign-in link signs in, leaves the address bar, and works once", async (t) => {
    const minted = await stack.api<{ token: string; url: string }>(
      user.api_key,
      "POST",
      "/api/v1/auth/sign-in-links",
    );
    assert.equal(minted.status, 201);
    const link = `${stack.base}/#/sign-in?link=${minted.json.token}`;
    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    const page = await context.newPage();
    await page.goto(link, { waitUntil: "domcontentloaded" });
    await heading(page, "Verify an address");
    assert.equal(new URL(page.url()).hash, "#/verify", "the token left the address bar");
    assert.equal((await storedSession(page))?.userId, user.user_id);

    // The same link in another browser: refused, with the form to sign in with a key.
    const other = await newContext(browser, 1440);
    t.after(() => other.close());
    const second = await other.newPage();
    await second.goto(link, { waitUntil: "domcontentloaded" });
    await second.getByRole("alert").filter({ hasText: "This sign-in link did not work" }).waitFor();
    assert.match(await second.getByRole("alert").first().innerText(), /already used/);
    await second.getByLabel("API key", { exact: true }).waitFor();
    assert.equal(new URL(second.url()).hash, "#/verify");
  });
}
