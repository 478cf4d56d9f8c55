// The remembered device in a real browser (registered by test/web/dashboard.test.ts): "Remember
// this device" at sign-in leaves an HttpOnly cookie that outlives the tab; a new tab (no
// sessionStorage, no other tab to ask) is signed in from it without the key, sees the device under
// its key, and revoking it there ends the session: a reload asks for the key. Sign out forgets it.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { heading, nav, newContext, open, screenshot, storedSession, until } from "../support/browser.ts";
import { shared } from "../support/shared.ts";
import type { Stack, User } from "../support/stack.ts";

let stack: Stack;
let browser: Browser;
let user: User;

async function signInRemembered(page: Page): Promise<void> {
  await open(page, stack.base);
  await page.getByLabel("API key", { exact: true }).fill(user.api_key);
  await page.getByLabel(/^Remember this device for 30 days$/).check();
  await page.getByRole("button", { name: "Sign in" }).click();
  await heading(page, "Verify an address");
}

const deviceCookie = async (context: BrowserContext) =>
  (await context.cookies()).find((c) => c.name === "mailprobe_device");

/** The tab closed (its sessionStorage gone with it), then the dashboard opened in a new one. */
async function reopen(context: BrowserContext, page: Page): Promise<Page> {
  await page.close();
  const next = await context.newPage();
  await open(next, stack.base);
  return next;
}

export function rememberedDevice(): void {
  before(async () => {
    stack = shared.stack;
    browser = shared.browser;
    user = await stack.createUser(5);
  });

  test("a remembered browser signs in without the key after its tab closed; revoking the device asks for the key again", async (t) => {
    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    const page = await context.newPage();
    await signInRemembered(page);
    const cookie = await deviceCookie(context);
    assert.ok(cookie, "the device cookie is set");
    assert.deepEqual(
      [cookie.httpOnly, cookie.sameSite, cookie.path],
      [true, "Strict", "/api/v1/auth/device"],
    );
    assert.equal(await page.evaluate("document.cookie"), "", "no script can read it");

    const reopened = await reopen(context, page);
    await heading(reopened, "Verify an address");
    assert.equal((await storedSession(reopened))?.userId, user.user_id, "a session without the key");
    assert.notEqual((await deviceCookie(context))?.value, cookie.value, "the cookie was replaced on use");

    await nav(reopened, "API keys").click();
    await heading(reopened, "API keys");
    const devices = reopened.getByRole("list", { name: /^Devices remembered with / });
    await devices.getByText("this device").waitFor();
    assert.match(await devices.innerText(), /Chrome on Linux/);
    await screenshot(reopened, "keys-remembered-device");

    await devices.getByRole("button", { name: /^Revoke device / }).click();
    // The device's session ended with it: the next request is refused and the form comes back.
    // (exact: the keys page's "API keys table" would match a partial label at once.)
    await reopened.getByLabel("API key", { exact: true }).waitFor();
    assert.equal(await storedSession(reopened), null, "the ended session is gone from the tab");
    await reopened.reload({ waitUntil: "domcontentloaded" });
    await reopened.getByLabel("API key", { exact: true }).waitFor();
    assert.equal(await storedSession(reopened), null);
    // The reload asked the revoked device first; its refusal cleared the cookie.
    await until("the refused cookie cleared", async () => (await deviceCookie(context)) === undefined);
  });

  test("sign out forgets the device: a new tab asks for the key", async (t) => {
    const context = await newContext(browser, 1440);
    t.after(() => context.close());
    const page = await context.newPage();
    await signInRemembered(page);
    assert.ok(await deviceCookie(context));
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("API key", { exact: true }).waitFor();
    await until(
      "the cookie cleared by the sign-out",
      async () => (await deviceCookie(context)) === undefined,
    );
    const next = await reopen(context, page);
    await next.getByLabel("API key", { exact: true }).waitFor();
    assert.equal(await storedSession(next), null);
  });
}
