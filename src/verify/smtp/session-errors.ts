// How a session names what went wrong: a thrown network or protocol error, a refused reply, or
// hosts that never answered, each turned into the reason the report carries.
import { AbortedError } from "../abort.ts";
import type { UnknownReason } from "../types.ts";
import type { ConnectFailureKind } from "./connect.ts";
import { SmtpClosedError, SmtpTimeoutError } from "./connection.ts";
import { SmtpProtocolError, type SmtpReply } from "./reply-reader.ts";
import { sessionFailureReason } from "./replies.ts";
import type { SessionFailure, SessionReport } from "./session-types.ts";

// A function, not an inline check: TypeScript would keep an `aborted` narrowing across awaits.
export function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

export function fail(report: SessionReport, failure: SessionFailure): null {
  report.failure = failure;
  return null;
}

export const failureOf = (reply: SmtpReply): SessionFailure => ({
  reason: sessionFailureReason(reply),
  reply,
});

/**
 * Our egress vs their refusal: when every host timed out nothing answered at all, which on a
 * real network means port 25 is filtered on our side (cloud providers block it by default).
 */
export function connectFailureReason(failures: readonly ConnectFailureKind[]): UnknownReason {
  if (failures.includes("proxy")) return "proxy_error";
  if (failures.length > 0 && failures.every((k) => k === "timeout")) return "port25_blocked";
  if (failures.length > 0 && failures.every((k) => k === "dropped")) return "connection_dropped";
  return "connection_failed";
}

export function reasonForError(error: unknown, signal: AbortSignal | undefined): UnknownReason {
  if (error instanceof AbortedError || signal?.aborted === true) return "timeout_smtp";
  if (error instanceof SmtpTimeoutError) return "smtp_timeout";
  if (error instanceof SmtpClosedError) return "connection_dropped";
  if (error instanceof SmtpProtocolError) return "smtp_protocol_error";
  throw error;
}
