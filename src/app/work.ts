import type { Config } from "../config/index.ts";
import { shortWarning } from "../config/short-warnings.ts";
import type { Logger } from "../observability/logger.ts";
import { openRuntime } from "./runtime.ts";
import { runUntilSignal } from "./signals.ts";
import { createWorkerRole } from "./worker-role.ts";

/** `mailprobe worker`: only the batch worker pool and webhook dispatcher (scale out on PostgreSQL). */
export async function work(
  config: Readonly<Config>,
  logger: Logger,
  say: (line: string) => void,
): Promise<void> {
  for (const w of config.warnings)
    logger.warn({ variable: w.variable, warning: w.code }, shortWarning(w, config));
  const runtime = await openRuntime(config, logger);
  const role = createWorkerRole(runtime.services);
  role.start();
  say(`mailprobe worker ${role.pool.workerId}: running ${config.worker.concurrency} sessions at most`);
  await runUntilSignal(logger, config.shutdownTimeoutMs, async () => {
    await role.stop(config.shutdownTimeoutMs);
    await runtime.close();
  });
}
