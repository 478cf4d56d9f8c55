// What the browser suite talks to: the mail-world simulator (a few domains, so verification gives
// varied statuses) and a real `mailprobe serve` child on a fresh DATA_DIR (embedded PGlite), with
// users made by the CLI as an operator makes them.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { worldEnv } from "../../support/batch.ts";
import {
  exitOf,
  freePort,
  inheritedEnv,
  runCli,
  startMailprobe,
  type MailprobeChild,
} from "../../support/child-process.ts";
import { startMailWorld, type MailWorld, type WorldSpec } from "../../support/mail-world/index.ts";

/**
 * acme.test: a Postfix with six mailboxes (others: 550 5.1.1, so `invalid`); catchall.test: an
 * Exim accepting every recipient (`catchall`); blocked.test: a host that refuses us at connect
 * with a blocklist reply (`unknown`, refunded); gone.test does not exist (`invalid`); grey.test
 * greylists (its job waits for a retry). Addresses at mailinator.com are `disposable_domain`
 * before any DNS.
 */
const WORLD: WorldSpec = {
  domains: [
    {
      name: "acme.test",
      hosts: [{ name: "mx.acme.test", kind: "postfix" }],
      mailboxes: ["ann", "bob", "carol", "dan", "erin", "fay"],
    },
    { name: "catchall.test", hosts: [{ name: "mx.catchall.test", kind: "exim" }], catchAll: true },
    {
      name: "blocked.test",
      hosts: [
        {
          name: "mx.blocked.test",
          connectReply: {
            code: 554,
            text: "5.7.1 Service unavailable; Client host [127.0.0.1] blocked using zen.spamhaus.org",
          },
        },
      ],
    },
    { name: "gone.test", dns: "nxdomain" },
    // Greylists every first attempt for an hour: its address waits (5 min) for a retry, so a task
    // holding it stays running until it is cancelled.
    { name: "grey.test", hosts: [{ name: "mx.grey.test" }], mailboxes: ["gina"], greylistSeconds: 3600 },
  ],
};

/** The server's ADMIN_TOKEN: the operator console's suite (suites/operator.ts) signs in with it. */
export const STACK_ADMIN_TOKEN = "browser-suite-admin-token-0123456789";

export interface User {
  user_id: string;
  balance: number;
  api_key: string;
}

/** An answer's JSON when the test does not name its type: the error envelope, or any resource. */
export type ApiJson = { error?: { code: string; message: string } } & Record<string, unknown>;

export interface Stack {
  /** http://127.0.0.1:<port> */
  base: string;
  /** The server's JWT_SECRET (set here, so a test can mint the token a session would carry). */
  jwtSecret: string;
  server: MailprobeChild;
  world: MailWorld;
  /** `mailprobe users create --credits N --json` against this server's data. */
  createUser(credits: number): Promise<User>;
  /** A JSON API call with an API key, outside the browser. */
  api<T = ApiJson>(
    key: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: T }>;
  close(): Promise<void>;
}

export interface StackOptions {
  /** Extra server environment (e.g. SESSION_TTL_SECONDS). */
  env?: Record<string, string>;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const world = await startMailWorld(WORLD);
  let dataDir: string | null = null;
  let server: MailprobeChild | null = null;
  const jwtSecret = randomBytes(32).toString("hex");
  try {
    dataDir = await mkdtemp(join(tmpdir(), "mailprobe-web-"));
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...inheritedEnv(),
      ...worldEnv(world),
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      JWT_SECRET: jwtSecret,
      ADMIN_TOKEN: STACK_ADMIN_TOKEN,
      LOG_LEVEL: "warn",
      ...opts.env,
    };
    server = await startMailprobe("serve", ["serve"], env, "listening on");
    const base = `http://127.0.0.1:${String(port)}`;
    const dir = dataDir;
    const child = server;
    return {
      base,
      jwtSecret,
      server: child,
      world,
      async createUser(credits) {
        return JSON.parse(
          await runCli(["users", "create", "--credits", String(credits), "--json"], env),
        ) as User;
      },
      async api<T = ApiJson>(key: string, method: string, path: string, body?: unknown) {
        const res = await fetch(`${base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${key}`,
            ...(body !== undefined ? { "content-type": "application/json" } : {}),
          },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        return { status: res.status, json: (text ? JSON.parse(text) : null) as T };
      },
      async close() {
        await stopServer(child);
        await world.close();
        if (existsSync(dir)) await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (server) await stopServer(server);
    await world.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

async function stopServer(server: MailprobeChild): Promise<void> {
  if (server.exited) return;
  server.proc.kill("SIGTERM");
  await Promise.race([exitOf(server), delay(10_000)]);
  if (!server.exited) server.proc.kill("SIGKILL");
}
