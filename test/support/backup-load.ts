// What the suite and the bench of `mailprobe backup` on a big database share: a data
// directory made big, the memory of a process read from /proc while it works, the traffic a
// running server serves meanwhile (reads and ledger writes, each timed), and the CLI run as an
// operator runs it. Linux only (/proc).
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { setTimeout as delay } from "node:timers/promises";
import { PGlite } from "@electric-sql/pglite";
import { freePort, startMailprobe, type MailprobeChild } from "./child-process.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const ROW_BYTES = 8_000;

/**
 * Adds `megabytes` of table data to the stopped data directory `pgdata`: rows of hex text
 * stored uncompressed (STORAGE EXTERNAL), so the directory grows by what is written and the
 * backup's deflate halves it, roughly as it does a database of results.
 */
export async function fillBallast(pgdata: string, megabytes: number): Promise<{ rows: number }> {
  const pg = await PGlite.create(pgdata);
  try {
    await pg.exec(
      "create table if not exists ballast (id bigint primary key, body text); " +
        "alter table ballast alter column body set storage external",
    );
    const rows = Math.ceil((megabytes * 1024 * 1024) / ROW_BYTES);
    const batch = 4_000;
    for (let from = 1; from <= rows; from += batch) {
      await pg.query(
        "insert into ballast select g, (select string_agg(md5(random()::text || i::text || g::text), '') " +
          "from generate_series(1, $3) i) from generate_series($1::bigint, $2::bigint) g",
        [from, Math.min(rows, from + batch - 1), ROW_BYTES / 32],
      );
    }
    await pg.exec("checkpoint");
    return { rows };
  } finally {
    await pg.close();
  }
}

/** `mailprobe serve --no-worker` on a free port, its DATA_DIR in `env`; its base URL. */
export async function serveOn(
  env: NodeJS.ProcessEnv,
  name = "serve",
  timeoutMs = 120_000,
): Promise<{ server: MailprobeChild; base: string }> {
  const port = await freePort();
  const server = await startMailprobe(
    name,
    ["serve", "--no-worker"],
    { ...env, PORT: String(port) },
    "API docs at",
    timeoutMs,
  );
  return { server, base: `http://127.0.0.1:${port}` };
}

/** A process's resident memory now and at its peak so far (VmRSS, VmHWM), in MB. */
export async function memoryOf(pid: number): Promise<{ rssMb: number; peakMb: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 };
}

/** Samples `pid`'s RSS every `everyMs` until stopped; the highest sample. */
export function sampleRss(pid: number, everyMs = 50): { stop: () => Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, (await memoryOf(pid).catch(() => ({ rssMb: 0 }))).rssMb);
      await delay(everyMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

export interface Traffic {
  requests: number;
  grants: number;
  slowestMs: number;
  p99Ms: number;
}

/**
 * Until stopped: a balance read every 100 ms (API key; half the default rate limit) and a credit
 * grant every 50 ms (admin API), each timed from send to answer. Every answer must be a success:
 * stop() rejects with the first that was not.
 */
export function trafficOn(
  base: string,
  apiKey: string,
  admin: { url: string; token: string },
  userId: string,
): { grants: () => number; stop: () => Promise<Traffic> } {
  const times: number[] = [];
  let grants = 0;
  let running = true;
  let failure: Error | null = null;
  const timed = async (send: () => Promise<Response>): Promise<boolean> => {
    const t0 = performance.now();
    const res = await send();
    const body = await res.text();
    times.push(performance.now() - t0);
    if (!res.ok) failure ??= new Error(`answered ${res.status} during the backup: ${body.slice(0, 300)}`);
    return res.ok;
  };
  const reads = (async () => {
    while (running && !failure) {
      await timed(() =>
        fetch(`${base}/api/v1/credits/balance`, { headers: { authorization: `Bearer ${apiKey}` } }),
      );
      await delay(100);
    }
  })();
  const writes = (async () => {
    while (running && !failure) {
      const granted = await timed(() =>
        fetch(`${admin.url}/admin/v1/credits/grant`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-admin-token": admin.token },
          body: JSON.stringify({ user_id: userId, amount: 1, reason: "during backup" }),
        }),
      );
      if (granted) grants++;
      await delay(50);
    }
  })();
  return {
    grants: () => grants,
    async stop() {
      running = false;
      await Promise.all([reads, writes]);
      if (failure) throw failure;
      const sorted = [...times].sort((a, b) => a - b);
      return {
        requests: times.length,
        grants,
        slowestMs: sorted.at(-1) ?? 0,
        p99Ms: sorted[Math.floor(sorted.length * 0.99)] ?? 0,
      };
    },
  };
}

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The CLI's own peak RSS (VmHWM), last read before it exited. */
  peakMb: number;
  ms: number;
}

/** `mailprobe ...args` as a child; `kill` (when given) decides, as it runs, to SIGKILL it. */
export async function runMailprobe(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  kill?: () => Promise<boolean>,
): Promise<CliRun> {
  const t0 = performance.now();
  const proc = spawn(process.execPath, ["bin/mailprobe.js", ...args], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  let peakMb = 0;
  let exited = false;
  // 'close', not 'exit': the process's output is read to its end before the run is.
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once("close", (code, signal) => {
      exited = true;
      resolve({ code, signal });
    }),
  );
  while (!exited) {
    peakMb = Math.max(peakMb, (await memoryOf(proc.pid!).catch(() => ({ peakMb: 0 }))).peakMb);
    if (kill && (await kill())) proc.kill("SIGKILL");
    await Promise.race([exit, delay(50)]);
  }
  return { ...(await exit), stdout, stderr, peakMb, ms: performance.now() - t0 };
}
