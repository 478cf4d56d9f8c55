import type { Logger } from "../observability/logger.ts";

/**
 * Resolves after SIGTERM/SIGINT once `shutdown` has finished. If shutdown overruns the deadline
 * the process exits non-zero rather than hang (a supervisor would SIGKILL it anyway).
 */
export function runUntilSignal(
  logger: Logger,
  deadlineMs: number,
  shutdown: () => Promise<void>,
): Promise<void> {
  return new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, "shutting down");
      const force = setTimeout(() => {
        logger.error("shutdown deadline passed; exiting");
        process.exit(1);
      }, deadlineMs + 5_000);
      force.unref();
      shutdown()
        .catch((err: unknown) => logger.error({ err }, "error during shutdown"))
        .finally(() => {
          clearTimeout(force);
          resolve();
        });
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  });
}
