// The dashboard in a real browser (`npm run test:web`; `npm test` leaves test/web/ out,
// as it needs Chromium). First the bundle's size budget, on the build the browser then loads.
// Then one `mailprobe serve` on a fresh DATA_DIR (embedded PGlite) with the mail-world simulator,
// and one headless Debian Chromium driven by playwright-core, shared by three suites that run in
// order, each with its own users and browser contexts: a user's session end to end
// (suites/journey.ts), the error paths (suites/errors.ts), and every page at 375 and 1440 px with
// axe-core and screenshots (suites/pages.ts). One process and one server on purpose: booting an
// embedded server is most of the cost (10-30 s on a busy 2-core machine), and a build made by a
// parallel test file could empty web/dist under a page that is loading.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser } from "./support/browser.ts";
import { bundleSizes, ensureWebBuild } from "./support/build.ts";
import { shared } from "./support/shared.ts";
import { startStack } from "./support/stack.ts";
import { dataIntact } from "./suites/data-intact.ts";
import { dryRunPrice } from "./suites/dry-run.ts";
import { errorPaths } from "./suites/errors.ts";
import { finishNow } from "./suites/finish-now.ts";
import { journey } from "./suites/journey.ts";
import { operatorConsole } from "./suites/operator.ts";
import { everyPage } from "./suites/pages.ts";
import { rememberedDevice } from "./suites/remembered-device.ts";
import { wideTables } from "./suites/wide-tables.ts";
import { sessionSuite } from "./suites/session.ts";
import { workbookSheets } from "./suites/workbook-sheets.ts";

/** The budget for all the dashboard's JS and CSS, gzipped: 150 kB (SI kilobytes). */
const BUDGET_GZIP_BYTES = 150_000;

const kb = (n: number): string => `${(n / 1000).toFixed(1)} kB`;

// A size, not a time, so it is asserted; the per-file figures are printed for the note.
test(`web/dist: JS + CSS under ${kb(BUDGET_GZIP_BYTES)} gzipped, the lazy chart chunk included`, () => {
  ensureWebBuild();
  const assets = bundleSizes();
  assert.ok(
    assets.some((a) => a.file.endsWith(".js") && a.initial),
    "index.html loads a script",
  );
  assert.ok(
    assets.some((a) => a.file.endsWith(".css") && a.initial),
    "index.html loads a stylesheet",
  );
  for (const a of assets)
    console.log(
      `# ${a.file}: ${kb(a.bytes)}, ${kb(a.gzipBytes)} gzipped${a.initial ? " (first view)" : " (lazy)"}`,
    );
  const total = assets.reduce((n, a) => n + a.gzipBytes, 0);
  const initial = assets.filter((a) => a.initial).reduce((n, a) => n + a.gzipBytes, 0);
  console.log(`# JS + CSS gzipped: ${kb(total)} in all, ${kb(initial)} for the first view`);
  assert.ok(total < BUDGET_GZIP_BYTES, `${kb(total)} gzipped is over the ${kb(BUDGET_GZIP_BYTES)} budget`);
});

describe("in Chromium, against a real server", () => {
  before(
    async () => {
      ensureWebBuild();
      // The browser first: without Chromium the suite stops at once, with what to install.
      shared.browser = await launchBrowser();
      // The journey's list calls a webhook receiver on 127.0.0.1, which the outbound guard refuses
      // unless private addresses are allowed (as in every test world).
      shared.stack = await startStack({ env: { WEBHOOK_ALLOW_PRIVATE: "true" } });
    },
    { timeout: 180_000 },
  );

  after(async () => {
    await shared.browser?.close().catch(() => {});
    await shared.stack?.close();
  });

  // Bounds for a stuck suite (each takes 20-60 s on a busy 2-core machine); every wait inside
  // has its own, shorter one (support/browser.ts WAIT_MS).
  describe("a user's session, end to end", { timeout: 180_000 }, journey);
  describe("error paths", { timeout: 180_000 }, errorPaths);
  describe("the price on the button, at 1280 and 390 px", { timeout: 180_000 }, dryRunPrice);
  describe("a workbook's list on the sheet that holds it", { timeout: 180_000 }, workbookSheets);
  describe("a list's own data comes back intact", { timeout: 180_000 }, dataIntact);
  describe("finish now: a task waiting for a server's retry", { timeout: 180_000 }, finishNow);
  describe("every page at 375 and 1440 px: axe-core and screenshots", { timeout: 300_000 }, everyPage);
  describe("a session shared by tabs, renewed while active, capped", { timeout: 180_000 }, sessionSuite);
  describe(
    "a remembered device: back in without the key, revoked with the keys",
    { timeout: 180_000 },
    rememberedDevice,
  );
  describe(
    "tables at 1280 px fit; narrower, they scroll in their box with a cue",
    { timeout: 180_000 },
    wideTables,
  );
  describe("the operator console: users, a grant, queue health", { timeout: 180_000 }, operatorConsole);
});
