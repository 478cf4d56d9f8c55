#!/usr/bin/env node
// Test runner: `npm test` (embedded PGlite) and `npm run test:pg` (PostgreSQL from
// TEST_DATABASE_URL, in a fresh database created for this run and dropped afterwards).
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

const usePg = process.argv.includes("--pg");
const only = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const root = new URL("..", import.meta.url).pathname;

/**
 * Files that took longest on the last measured runs (the slowest-files table each run prints at
 * its end), started first: with two files at a time, a long file started last is the run's tail.
 * An outdated entry only costs order, never a test.
 */
function longestFirst(a, b) {
  const rank = (f) => {
    const i = LONGEST_FILES.indexOf(f);
    return i === -1 ? LONGEST_FILES.length : i;
  };
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
}

const LONGEST_FILES = [
  "test/integration/faults/hostile-load.test.ts",
  "test/integration/cli/backup.test.ts",
  "test/integration/cli/cli.test.ts",
  "test/integration/cli/users.test.ts",
  "test/integration/faults/disk-full.test.ts",
  "test/integration/cli/client.test.ts",
  "test/integration/tasks/pipeline.test.ts",
  "test/integration/tasks/per-ip-limit.test.ts",
  "test/integration/tasks/provider-pace.test.ts",
  "test/integration/tasks/crash-recovery.test.ts",
  "test/integration/cli/start-up.test.ts",
  "test/integration/faults/pg-restart.test.ts",
  "test/integration/api/checks-and-dependencies.test.ts",
];

const files = only.length
  ? only
  : readdirSync(join(root, "test"), { recursive: true })
      .filter((f) => String(f).endsWith(".test.ts"))
      // Suites with their own command: the real-MTA suite needs its lab (`npm run test:mta`), the
      // fuzz and chaos suites run for minutes (`npm run test:fuzz`, `npm run test:chaos`), the
      // browser suite needs Chromium (`npm run test:web`).
      .filter((f) => !/^(mta|fuzz|chaos|web)\//.test(String(f)))
      .map((f) => join("test", String(f)))
      .sort(longestFirst);

const env = { ...process.env };
let cleanup = async () => {};

if (usePg) {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) {
    console.error("test:pg needs TEST_DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/test");
    process.exit(2);
  }
  const name = `mailprobe_test_${Date.now()}_${randomBytes(3).toString("hex")}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  env.TEST_DATABASE_URL = url.toString();
  console.log(`test:pg: fresh database ${name}`);
  cleanup = async () => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`);
    await c.end();
  };
} else {
  delete env.TEST_DATABASE_URL;
  const dir = mkdtempSync(join(tmpdir(), "mailprobe-test-"));
  const template = join(dir, "pglite-template.tar");
  const made = spawnSync(process.execPath, ["--import", "tsx", "scripts/make-pglite-template.ts", template], {
    cwd: root,
    stdio: "inherit",
  });
  if (made.status !== 0) process.exit(made.status ?? 1);
  env.MAILPROBE_PGLITE_TEMPLATE = template;
  cleanup = async () => rmSync(dir, { recursive: true, force: true });
}

const concurrency = env.TEST_CONCURRENCY ?? "2";
const result = spawnSync(
  process.execPath,
  [
    "--import",
    "tsx",
    "--test",
    `--test-concurrency=${concurrency}`,
    // Per test file. The browser suite (one server, one Chromium, many suites in order) sets more.
    `--test-timeout=${env.TEST_TIMEOUT_MS ?? "300000"}`,
    "--test-reporter=spec",
    "--test-reporter-destination=stdout",
    "--test-reporter=./scripts/test-timing-reporter.mjs",
    "--test-reporter-destination=stdout",
    ...files,
  ],
  { cwd: root, stdio: "inherit", env },
);
await cleanup();
process.exit(result.status ?? 1);
