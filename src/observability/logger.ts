import { pino, type Logger } from "pino";
import pinoPretty from "pino-pretty";
import type { LogFormat, LogLevel } from "../config/index.ts";

export type { Logger };

const REDACT = {
  paths: ["req.headers.authorization", 'req.headers["x-api-key"]', 'req.headers["x-admin-token"]'],
  censor: "[redacted]",
};

/**
 * Whether logs are written pretty (human lines) or as JSON: LOG_FORMAT=pretty or json decides;
 * `auto` is pretty only when the destination is a terminal, so a pipe or a log collector always
 * gets JSON lines.
 */
export function prettyLogs(format: LogFormat, destinationIsTty: boolean): boolean {
  return format === "pretty" || (format === "auto" && destinationIsTty);
}

/**
 * JSON lines on stdout (or, with `format` pretty, human-readable lines, colourised on a
 * terminal); secrets in headers never reach the log, in either format (redaction happens before
 * formatting).
 */
export function createLogger(
  level: LogLevel,
  destination: "stdout" | "stderr" = "stdout",
  format: LogFormat = "json",
): Logger {
  const fd = destination === "stdout" ? 1 : 2;
  const stream = destination === "stdout" ? process.stdout : process.stderr;
  if (prettyLogs(format, stream.isTTY === true)) {
    // A stream in this thread, not a transport worker: nothing is lost at exit, and the order of
    // log lines and the plain lines `serve` prints on stdout is kept.
    const pretty = pinoPretty({
      destination: fd,
      sync: true,
      colorize: stream.isTTY === true,
      translateTime: "SYS:HH:MM:ss.l",
      ignore: "pid,hostname",
      // One line per record: a request's reqId and fields inline, not a block of ten lines.
      singleLine: true,
    });
    return pino({ level, redact: REDACT }, pretty);
  }
  return pino({ level, redact: REDACT }, pino.destination({ fd, sync: destination === "stderr" }));
}
