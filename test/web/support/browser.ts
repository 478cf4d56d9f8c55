// The browser side of the suite: Debian's Chromium driven by playwright-core (the browsers
// Playwright downloads are not available on CI machines without network), pages at a given
// width, signing in the way a user does, axe-core, screenshots and downloads.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import AxeBuilder from "@axe-core/playwright";
import {
  chromium,
  type Browser,
  type BrowserContext,
  type Download,
  type Locator,
  type Page,
} from "playwright-core";
import { ROOT } from "./build.ts";
import { shrinkPng } from "./png.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const SCREENSHOTS = join(ROOT, "docs", "screenshots");
/** Upper bound of any single wait on the page (an element, a navigation, a download). */
const WAIT_MS = 15_000;

/** The widths checked: a phone and a laptop. */
export const WIDTHS = [375, 1440] as const;

/** A fresh headless Chromium; its background services off (this machine's network is closed). */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `No Chromium at ${CHROMIUM}: install Debian's (apt-get install -y chromium) or set CHROMIUM_PATH. ` +
        "The browser suite (npm run test:web) needs it; npm test does not.",
    );
  return chromium.launch({
    executablePath: CHROMIUM,
    timeout: 60_000,
    args: [
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * A context per user and width: its own sessionStorage (as a new tab), UTC and en-US so dates and
 * numbers read the same on every machine, reduced motion so charts draw without animation.
 */
export async function newContext(browser: Browser, width: number = 1440): Promise<BrowserContext> {
  const context = await browser.newContext({
    viewport: { width, height: width < 600 ? 812 : 900 },
    deviceScaleFactor: 1,
    locale: "en-US",
    timezoneId: "UTC",
    reducedMotion: "reduce",
    acceptDownloads: true,
  });
  context.setDefaultTimeout(WAIT_MS);
  context.setDefaultNavigationTimeout(WAIT_MS);
  return context;
}

/** Opens the dashboard at `hash` (e.g. "#/verify"). */
export async function open(page: Page, base: string, hash = ""): Promise<void> {
  await page.goto(`${base}/${hash}`, { waitUntil: "domcontentloaded" });
}

/** The sign-in form, filled and sent; resolves once the signed-in shell (nav) is there. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel("API key", { exact: true }).fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Main" }).waitFor();
}

/** The page's h1 once it shows `name` (pages render a loading h1 first). */
export async function heading(page: Page, name: string | RegExp): Promise<Locator> {
  const h = page.getByRole("heading", { level: 1, name });
  await h.waitFor();
  return h;
}

export const nav = (page: Page, name: string): Locator =>
  page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });

/** A new browser context at `width`, signed in with `key`, on the Lists page; closed after `t`. */
export async function listsPageOf(
  browser: Browser,
  base: string,
  t: { after: (fn: () => Promise<void>) => void },
  key: string,
  width = 1440,
): Promise<Page> {
  const context = await newContext(browser, width);
  t.after(() => context.close());
  const page = await context.newPage();
  await open(page, base);
  await signIn(page, key);
  await nav(page, "Lists").click();
  await heading(page, "Verify a list");
  return page;
}

/**
 * The Lists page's Start once it carries the list's price, e.g. "Verify 7 addresses for 5 credits
 * (balance 50 → 45)" (web/src/lib/upload-quote.ts startLabel).
 */
export const pricedStart = (page: Page): Locator =>
  page.getByRole("button", {
    name: /^Verify [\d,]+ address(es)? for [\d,]+ credits? \(balance [\d,]+ → [\d,]+\)$/,
  });

/** Fails when the page is wider than the viewport (a phone would scroll it sideways). */
export async function assertNoSidewaysScroll(page: Page, name: string): Promise<void> {
  const { scrollWidth, clientWidth } = await page.evaluate<{ scrollWidth: number; clientWidth: number }>(
    "({ scrollWidth: document.scrollingElement.scrollWidth, clientWidth: document.scrollingElement.clientWidth })",
  );
  const width = String(page.viewportSize()?.width ?? 0);
  assert.ok(
    scrollWidth <= clientWidth,
    `${name} at ${width} px scrolls sideways: ${String(scrollWidth)} > ${String(clientWidth)} px`,
  );
}

/** Polls `fn` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = WAIT_MS,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not within ${timeoutMs} ms${last instanceof Error ? ` (${last.message})` : ""}`,
      );
    await delay(everyMs);
  }
}

/** The dashboard's stored session (sessionStorage "mailprobe.session"), or null. */
export async function storedSession(
  page: Page,
): Promise<{ token: string; expiresAt: string; userId: string } | null> {
  const raw = await page.evaluate<string | null>("window.sessionStorage.getItem('mailprobe.session')");
  return raw ? (JSON.parse(raw) as { token: string; expiresAt: string; userId: string }) : null;
}

export async function setStoredSession(page: Page, value: unknown): Promise<void> {
  await page.evaluate(
    `window.sessionStorage.setItem('mailprobe.session', ${JSON.stringify(JSON.stringify(value))})`,
  );
}

export interface AxeReport {
  page: string;
  /** Violations with impact serious or critical: the suite wants none. */
  serious: string[];
  /** Minor and moderate ones, printed as diagnostics. */
  others: string[];
}

/** axe-core (WCAG 2.x A/AA and best practices) on the page as it is now. */
export async function axe(page: Page, name: string): Promise<AxeReport> {
  const result = await new AxeBuilder({ page }).analyze();
  const line = (v: (typeof result.violations)[number]): string =>
    `${v.impact ?? "?"} ${v.id}: ${v.help} (${v.nodes
      .slice(0, 4)
      .map((n) => n.target.join(" "))
      .join(", ")}${v.nodes.length > 4 ? `, … ${String(v.nodes.length)} nodes` : ""})`;
  const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  const others = result.violations.filter((v) => !serious.includes(v));
  return { page: name, serious: serious.map(line), others: others.map(line) };
}

/**
 * Full-page PNG at docs/screenshots/<name>-<width>.png (fixed names: the README shows them),
 * reduced to a 256-colour palette (png.ts) because the files are committed.
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOTS, { recursive: true });
  const width = page.viewportSize()?.width ?? 0;
  const path = join(SCREENSHOTS, `${name}-${String(width)}.png`);
  // Fonts and the lazily loaded chart chunk settle before the picture is taken.
  await page.evaluate("document.fonts.ready");
  const png = await page.screenshot({ fullPage: true, animations: "disabled", caret: "hide", scale: "css" });
  await writeFile(path, shrinkPng(png));
  return path;
}

/** Clicks `button` and resolves with the download it starts: its suggested name and bytes. */
export async function download(page: Page, button: Locator): Promise<{ name: string; data: Buffer }> {
  const [file] = await Promise.all([page.waitForEvent("download", { timeout: WAIT_MS }), button.click()]);
  return readDownload(file);
}

async function readDownload(file: Download): Promise<{ name: string; data: Buffer }> {
  const failure = await file.failure();
  assert.equal(failure, null, `download ${file.suggestedFilename()} failed: ${String(failure)}`);
  const path = await file.path();
  return { name: file.suggestedFilename(), data: await readFile(path) };
}
