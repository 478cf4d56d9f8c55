#!/usr/bin/env node
// Start-to-healthy and idle memory of the service as an operator starts it (README: "The compiled
// runtime"). Each run starts COMMAND (default `npm start`) in a checkout on a free loopback port,
// polls /healthz every 20 ms, reads VmRSS from /proc after IDLE ms, then stops the process group.
// The first start in each checkout makes its data directory (PGlite's initdb) and is reported
// apart; the measured runs restart on it, as a service restarts. With several --dir, the runs
// alternate between them, so that a busy machine weighs on each alike.
//   node scripts/measure-start.mjs [--runs N] [--idle-ms MS] [--dir CHECKOUT]... [-- COMMAND...]
// Linux only (/proc).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const split = args.indexOf("--");
const options = split === -1 ? args : args.slice(0, split);
const command = split === -1 ? ["npm", "start"] : args.slice(split + 1);
const option = (name, fallback) => {
  const i = options.indexOf(name);
  return i === -1 ? fallback : options[i + 1];
};
const runs = Number(option("--runs", "5"));
const idleMs = Number(option("--idle-ms", "5000"));
const dirs = options.flatMap((o, i) => (o === "--dir" ? [resolve(options[i + 1])] : []));
if (dirs.length === 0) dirs.push(fileURLToPath(new URL("..", import.meta.url)));
const HEALTHY_WITHIN_MS = 120_000;
/** USER_HZ of /proc/<pid>/stat: 100 on every Linux architecture Node supports. */
const CLOCK_TICKS_PER_SECOND = 100;

const checkouts = dirs.map((dir) => ({
  dir,
  dataDir: mkdtempSync(join(tmpdir(), "mailprobe-measure-")),
  results: [],
}));
try {
  console.log(`${command.join(" ")}; RSS read after ${idleMs} ms idle`);
  for (const c of checkouts) {
    const first = await measure(c);
    console.log(`${c.dir}: first start (new data directory) healthy in ${first.healthyMs} ms`);
  }
  for (let i = 1; i <= runs; i++) {
    for (const c of checkouts) {
      const r = await measure(c);
      c.results.push(r);
      console.log(
        `${c.dir} run ${i}: healthy in ${r.healthyMs} ms (CPU ${r.cpuMs} ms); RSS server ${mb(r.serverRss)}, all processes ${mb(r.treeRss)} (${r.processes})`,
      );
    }
  }
  for (const c of checkouts) {
    const summary = (pick, unit) => {
      const v = c.results.map(pick).sort((a, b) => a - b);
      return `median ${unit(v[Math.floor(v.length / 2)])} (min ${unit(v[0])}, max ${unit(v.at(-1))})`;
    };
    console.log(`${c.dir} (${runs} runs):`);
    const ms = (x) => `${x} ms`;
    console.log(`  start-to-healthy: ${summary((r) => r.healthyMs, ms)}`);
    console.log(`  CPU time to healthy: ${summary((r) => r.cpuMs, ms)}`);
    console.log(`  idle RSS, server process: ${summary((r) => r.serverRss, mb)}`);
    console.log(`  idle RSS, all processes: ${summary((r) => r.treeRss, mb)}`);
  }
} finally {
  for (const c of checkouts) rmSync(c.dataDir, { recursive: true, force: true });
}

async function measure({ dir, dataDir }) {
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir };
  for (const name of ["DATABASE_URL", "REDIS_URL", "MAILPROBE_PGLITE_TEMPLATE"]) delete env[name];
  const started = performance.now();
  // Its own process group, so that npm, its shell and the server stop together.
  const child = spawn(command[0], command.slice(1), { cwd: dir, env, detached: true, stdio: "ignore" });
  let exited = false;
  child.once("exit", () => (exited = true));
  try {
    let healthyMs = null;
    while (healthyMs === null) {
      if (exited) throw new Error(`${command.join(" ")} exited before /healthz answered`);
      if (performance.now() - started > HEALTHY_WITHIN_MS) throw new Error("not healthy in 120 s");
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) })
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) healthyMs = Math.round(performance.now() - started);
      else await delay(20);
    }
    const cpuMs = descendants(child.pid).reduce((sum, pid) => sum + cpuTimeMs(pid), 0);
    await delay(idleMs);
    const tree = descendants(child.pid);
    const rss = tree.map((pid) => ({ pid, kb: rssKb(pid), cmd: cmdline(pid) }));
    // The node process running bin/mailprobe.js, not the shell npm runs it through.
    const server = rss.find(
      (p) => basename(p.cmd.split(" ")[0]) === "node" && p.cmd.includes("bin/mailprobe.js"),
    );
    if (!server)
      throw new Error(`no node process runs bin/mailprobe.js: ${rss.map((p) => p.cmd).join("; ")}`);
    return {
      healthyMs,
      cpuMs,
      serverRss: server.kb,
      treeRss: rss.reduce((sum, p) => sum + p.kb, 0),
      processes: rss.map((p) => basename(p.cmd.split(" ")[0])).join(" + "),
    };
  } finally {
    if (!exited) {
      const gone = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid, "SIGTERM");
      await Promise.race([gone, delay(15_000)]);
      if (!exited) process.kill(-child.pid, "SIGKILL");
    }
  }
}

function descendants(pid) {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
    readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").split(" ").filter(Boolean).map(Number),
  );
  return [pid, ...children.flatMap(descendants)];
}

/**
 * CPU time used so far, exited children it waited for included (npm's prestart): the cost of a
 * start, which a busy machine stretches less than the wall time.
 */
function cpuTimeMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces): utime stime cutime cstime are 14-17.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0);
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

function rssKb(pid) {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
  return line ? Number(line[1]) : 0;
}

function cmdline(pid) {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
}

function mb(kb) {
  return `${Math.round(kb / 1024)} MB`;
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}
