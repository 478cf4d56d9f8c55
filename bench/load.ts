// A bounded HTTP load generator, run as its own process so it doesn't share the event loop (or,
// as far as 2 cores allow, the CPU) with the server it measures.
// argv: URL KEY EMAIL CONNECTIONS SECONDS → prints one JSON line {requests, errors, seconds, statuses}.
import { Pool } from "undici";

const [url, key, email, connectionsArg, secondsArg] = process.argv.slice(2);
if (!url || !key || !email) throw new Error("usage: load.ts URL KEY EMAIL CONNECTIONS SECONDS");
const connections = Number(connectionsArg ?? 16);
const seconds = Math.min(Number(secondsArg ?? 5), 60);
const target = new URL(url);
const pool = new Pool(target.origin, { connections, pipelining: 1 });
const body = JSON.stringify({ email });
const statuses: Record<number, number> = {};
let requests = 0;
let errors = 0;
const started = performance.now();
const deadline = started + seconds * 1000;

async function loop(): Promise<void> {
  while (performance.now() < deadline) {
    try {
      const res = await pool.request({
        path: target.pathname,
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body,
      });
      await res.body.dump();
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      requests++;
    } catch {
      errors++;
    }
  }
}

await Promise.all(Array.from({ length: connections }, loop));
await pool.close();
console.log(JSON.stringify({ requests, errors, seconds: (performance.now() - started) / 1000, statuses }));
