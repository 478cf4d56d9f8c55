import { basename, resolve } from "node:path";
import { DEFAULT_DATA_DIR, type Config } from "../config/index.ts";
import { shortWarning } from "../config/short-warnings.ts";
import type { Logger } from "../observability/logger.ts";
import { newAdminToken, loopbackUrl, publishAdminEndpoint } from "./admin-endpoint.ts";
import { buildApp } from "./build-app.ts";
import { listenUrls } from "./listen-addresses.ts";
import { explainListenError } from "./listen-error.ts";
import { openRuntime } from "./runtime.ts";
import { runUntilSignal } from "./signals.ts";
import { createWorkerRole } from "./worker-role.ts";

export interface ServeOptions {
  /** Called with lines meant for the person who ran `npm start` (not structured logs). */
  say: (line: string) => void;
  /** Run the batch worker pool and webhook dispatcher in this process too. */
  withWorker: boolean;
}

/**
 * How this process was started, as the hint must name the CLI: `mailprobe` when run from PATH
 * (the container image links it into /usr/local/bin, `npm install -g` does the same), else
 * `npx mailprobe` (a checkout's `npm start`). The image has the package, not an npx project, so
 * `npx mailprobe` failed inside it.
 */
function cliCommand(): string {
  return basename(process.argv[1] ?? "") === "mailprobe" ? "mailprobe" : "npx mailprobe";
}

/**
 * What the first-key hint must set for the CLI to reach this server's data: without the server's
 * DATA_DIR the CLI silently created a second, empty database in ./data.
 */
function cliEnvPrefix(config: Readonly<Config>): string {
  if (config.databaseUrl !== null || config.dataDir === resolve(DEFAULT_DATA_DIR)) return "";
  const dir = /^[\w./@%+=:,-]+$/.test(config.dataDir)
    ? config.dataDir
    : `'${config.dataDir.replace(/'/g, `'\\''`)}'`;
  return `DATA_DIR=${dir} `;
}

/**
 * `mailprobe serve`: the HTTP API (and, unless --no-worker, the batch workers). Resolves when
 * the server has stopped after SIGTERM/SIGINT: stop claiming → drain sessions → stop HTTP →
 * close the DB, bounded by SHUTDOWN_TIMEOUT_MS.
 */
export async function serve(config: Readonly<Config>, logger: Logger, opts: ServeOptions): Promise<void> {
  const startedAt = performance.now();
  const embedded = config.databaseUrl === null;
  opts.say(
    `mailprobe: starting on ${embedded ? `embedded PostgreSQL in ${config.dataDir}` : "PostgreSQL (DATABASE_URL)"}…`,
  );
  for (const w of config.warnings)
    logger.warn({ variable: w.variable, warning: w.code }, shortWarning(w, config));
  const runtime = await openRuntime(config, logger);
  const adminToken = embedded ? newAdminToken() : null;
  const app = await buildApp(runtime.services, { adminToken });
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (e) {
    const explained = explainListenError(e, config.host, config.port);
    if (!explained) throw e;
    // Close what was opened (the data directory's lock above all) before saying why.
    await app.close();
    await runtime.close();
    throw explained;
  }
  // Every listener: a HOST name such as localhost binds each address it resolves to.
  const urls = [
    ...new Set(app.addresses().flatMap((bound) => (typeof bound === "string" ? [bound] : listenUrls(bound)))),
  ];
  const unpublish = adminToken
    ? await publishAdminEndpoint(config.dataDir, {
        pid: process.pid,
        url: loopbackUrl(config.host, (app.server.address() as { port: number }).port),
        token: adminToken,
      })
    : null;

  opts.say(
    `mailprobe: listening on ${urls.join(", ")} (ready in ${Math.round(performance.now() - startedAt)} ms)`,
  );
  if (runtime.isFresh) {
    opts.say("mailprobe: no users yet. Create one and get its first API key with:");
    opts.say(`    ${cliEnvPrefix(config)}${cliCommand()} users create --credits 100`);
    if (!embedded) opts.say("  (with this server's DATABASE_URL in the environment)");
    opts.say(
      "  then call: curl -H 'Authorization: Bearer <key>' " +
        loopbackUrl(config.host, config.port) +
        "/api/v1/credits/balance",
    );
  }
  opts.say(`mailprobe: dashboard at ${loopbackUrl(config.host, config.port)}/ (sign in with an API key)`);
  opts.say(`mailprobe: API docs at ${loopbackUrl(config.host, config.port)}/docs`);

  const workers = opts.withWorker ? createWorkerRole(runtime.services) : null;
  workers?.start();
  if (!workers) opts.say("mailprobe: batch workers disabled in this process (--no-worker)");

  await runUntilSignal(logger, config.shutdownTimeoutMs, async () => {
    // Stop claiming and let running SMTP sessions finish (unfinished jobs go back to the queue),
    // then stop answering HTTP, then close the database.
    await workers?.stop(config.shutdownTimeoutMs);
    await unpublish?.();
    await app.close();
    await runtime.close();
  });
}
