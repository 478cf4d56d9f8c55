import { setTimeout as delay } from "node:timers/promises";
import type { Database } from "../../src/db/client.ts";

/** Polls until the task has finished_at set; bounded so a broken pipeline fails the test instead of hanging it. */
export async function waitForTaskFinished(db: Database, taskId: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await db.query<{ finished_at: Date | null }>(
      "select finished_at from tasks where id = $1",
      [taskId],
    );
    if (rows[0]?.finished_at) return;
    if (Date.now() > deadline) throw new Error(`task ${taskId} did not finish within ${timeoutMs} ms`);
    await delay(100);
  }
}

/** The mail-world environment for a test context. */
export function worldEnv(
  world: { dns: { host: string; port: number }; smtpPort: number },
  extra: Record<string, string> = {},
) {
  return {
    DNS_SERVERS: `${world.dns.host}:${world.dns.port}`,
    SMTP_PORT: String(world.smtpPort),
    DNS_TIMEOUT_MS: "500",
    DNS_TRIES: "1",
    SMTP_CONNECT_TIMEOUT_MS: "1000",
    SMTP_GREETING_TIMEOUT_MS: "2000",
    SMTP_COMMAND_TIMEOUT_MS: "2000",
    SMTP_HELO_NAME: "probe.mailprobe.test",
    WORKER_POLL_INTERVAL_MS: "50",
    // The simulator's hosts live on 127.x addresses, which the outbound guard refuses by default.
    SMTP_ALLOW_PRIVATE_HOSTS: "true",
    ...extra,
  };
}
