import { pino, type Logger } from "pino";
import type { LogLevel } from "../config/index.ts";

export type { Logger };

/** JSON lines on stdout; secrets in headers never reach the log. */
export function createLogger(level: LogLevel, destination: "stdout" | "stderr" = "stdout"): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ["req.headers.authorization", 'req.headers["x-api-key"]', 'req.headers["x-admin-token"]'],
        censor: "[redacted]",
      },
    },
    pino.destination({ fd: destination === "stdout" ? 1 : 2, sync: destination === "stderr" }),
  );
}
