// Throughput of POST /api/v1/verify when the answer is a cached, free repeat: the cost of the
// service itself (auth, rate limit, free-repeat check, cache lookup, ledger lock, insert) with no
// SMTP. The server runs in this process on loopback; the load comes from bench/load.ts in a child.
import { spawn } from "node:child_process";
import { buildApp } from "../src/app/build-app.ts";
import { buildServices } from "../src/app/services.ts";
import { loadConfig } from "../src/config/index.ts";
import type { Database } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { openPglite } from "../src/db/pglite.ts";
import { openPostgres } from "../src/db/postgres.ts";
import { createLogger } from "../src/observability/logger.ts";
import { startMailWorld } from "../test/support/mail-world/index.ts";

const CONNECTIONS = 16;
const SECONDS = 8;

function runLoad(
  url: string,
  key: string,
  email: string,
): Promise<{ requests: number; errors: number; seconds: number; statuses: Record<string, number> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "bench/load.ts", url, key, email, String(CONNECTIONS), String(SECONDS)],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out.trim())) : reject(new Error(`load exited ${code}`)),
    );
  });
}

async function measure(label: string, db: Database, dnsServer: string, smtpPort: number): Promise<void> {
  await migrate(db);
  const config = loadConfig({
    LOG_LEVEL: "silent",
    RATE_LIMIT_PER_SECOND: "1000000",
    RATE_LIMIT_BURST: "1000000",
    DNS_SERVERS: dnsServer,
    SMTP_PORT: String(smtpPort),
    SMTP_HELO_NAME: "bench.mailprobe.test",
    SMTP_ALLOW_PRIVATE_HOSTS: "true",
  });
  const services = buildServices({
    config,
    db,
    logger: createLogger("silent"),
    encryptionKey: Buffer.alloc(32, 1),
    jwtSecret: null,
    processMetrics: false,
  });
  const app = await buildApp(services);
  await app.listen({ port: 0, host: "127.0.0.1" });
  try {
    const { apiKey } = await services.users
      .create({ email: null, credits: 10 })
      .then((u) => ({ apiKey: u.apiKey.plaintext }));
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1/verify`;
    // Warm: the first request verifies over SMTP and pays; every later one is a cached free repeat.
    await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ email: "alice@bench.test" }),
    });
    const r = await runLoad(url, apiKey, "alice@bench.test");
    const ok = r.statuses["200"] ?? 0;
    console.log(
      `  ${label.padEnd(10)} ${(ok / r.seconds).toFixed(0).padStart(6)} req/s cached answers ` +
        `(${ok} × 200 in ${r.seconds.toFixed(1)} s, ${CONNECTIONS} connections, other statuses ${JSON.stringify({ ...r.statuses, 200: undefined })}, errors ${r.errors})`,
    );
  } finally {
    await app.close();
    await services.close();
    await db.close();
  }
}

export async function benchVerifyHttp(): Promise<void> {
  console.log(
    "\nPOST /api/v1/verify, cached free repeats (2-core machine, server and load generator share it)",
  );
  const world = await startMailWorld({
    latencyMs: 20,
    domains: [{ name: "bench.test", hosts: [{ name: "mx.bench.test" }], mailboxes: ["alice"] }],
  });
  const dns = `${world.dns.host}:${world.dns.port}`;
  try {
    await measure("pglite", await openPglite(null), dns, world.smtpPort);
    const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
    if (pgUrl) await measure("postgres", openPostgres(pgUrl, 10), dns, world.smtpPort);
    else console.log("  postgres   skipped (set BENCH_DATABASE_URL)");
  } finally {
    await world.close();
  }
}
