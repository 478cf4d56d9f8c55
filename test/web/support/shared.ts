// What the browser suites share, set up once by test/web/dashboard.test.ts: one server (with its
// mail world) and one Chromium. Starting them is most of the suite's cost (an embedded server
// takes 10-30 s to boot on a busy 2-core machine), so the three suites run against the same ones,
// each with its own users and browser contexts.
import type { Browser } from "playwright-core";
import type { Stack } from "./stack.ts";

export interface Shared {
  stack: Stack;
  browser: Browser;
}

/** Filled by the entry's `before`; read by the suites inside their hooks and tests. */
export const shared = {} as Shared;
