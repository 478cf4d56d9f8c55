// Reaching a host and opening the conversation: connect (with its own timeout), the banner,
// EHLO (HELO when EHLO is unknown) and STARTTLS when offered; and the follow-up connection to
// a host that already greeted us.
import { AbortedError } from "../abort.ts";
import type { ConnectPort } from "../ports.ts";
import { ConnectError, type ConnectFailureKind } from "./connect.ts";
import { SmtpClosedError, SmtpConnection, SmtpTimeoutError } from "./connection.ts";
import type { LiveConnection } from "./live-connection.ts";
import { SmtpProtocolError, type SmtpReply } from "./reply-reader.ts";
import { sessionFailureReason } from "./replies.ts";
import { connectFailureReason, isAborted, reasonForError } from "./session-errors.ts";
import { FINISHED, type ConnectionEnd, type SessionConfig, type SessionReport } from "./session-types.ts";

type Greeted =
  | { kind: "ready"; conn: SmtpConnection }
  /** Try the next host (connect failure or a close before the banner); nothing left open. */
  | { kind: "next" }
  /** The host refused us or timed out (report.failure set); `closed` settles when the socket is. */
  | { kind: "failed"; closed: Promise<void> };

export async function connectAndGreet(
  address: string,
  config: SessionConfig,
  connect: ConnectPort,
  report: SessionReport,
  signal: AbortSignal | undefined,
  failures: ConnectFailureKind[],
): Promise<Greeted> {
  let conn: SmtpConnection;
  try {
    conn = new SmtpConnection(await connectWithTimeout(connect, address, config, signal));
  } catch (error) {
    if (error instanceof ConnectError) {
      failures.push(error.kind);
      return { kind: "next" };
    }
    if (error instanceof AbortedError) {
      report.failure = { reason: "timeout_smtp" };
      return { kind: "failed", closed: Promise.resolve() };
    }
    throw error;
  }

  const onAbort = (): void => conn.interrupt(new AbortedError());
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const banner = await conn.read(config.greetingTimeoutMs, "greeting");
    report.greeting = banner.text;
    if (banner.code !== 220) {
      // "554 5.7.1 ... blocked using zen.spamhaus.org" or "421 4.7.0 Too many connections" at
      // connect: the host refuses us, not a mailbox. Its siblings share the policy; stop here.
      report.failure = { reason: sessionFailureReason(banner), reply: banner };
      conn.destroy();
      return { kind: "failed", closed: conn.closed };
    }
    report.greeted = true;
    report.connections++;
    return { kind: "ready", conn };
  } catch (error) {
    conn.destroy();
    if (error instanceof SmtpClosedError && !isAborted(signal)) {
      await conn.closed;
      failures.push("dropped");
      return { kind: "next" };
    }
    // A silent banner is a tarpit: another 15 s on a sibling host would only repeat it.
    report.failure = { reason: reasonForError(error, signal) };
    return { kind: "failed", closed: conn.closed };
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/** A follow-up connection to the host that already greeted us; null (report.failure set) when it fails. */
export async function reconnect(
  address: string,
  config: SessionConfig,
  connect: ConnectPort,
  report: SessionReport,
  signal: AbortSignal | undefined,
): Promise<SmtpConnection | null> {
  const failures: ConnectFailureKind[] = [];
  const greeted = await connectAndGreet(address, config, connect, report, signal, failures);
  if (greeted.kind === "ready") return greeted.conn;
  if (greeted.kind === "next") report.failure = { reason: connectFailureReason(failures) };
  else await greeted.closed;
  return null;
}

async function connectWithTimeout(
  connect: ConnectPort,
  address: string,
  config: SessionConfig,
  signal: AbortSignal | undefined,
) {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, config.connectTimeoutMs);
  timer.unref();
  const onAbort = (): void => controller.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted === true) controller.abort();
  try {
    return await connect.connect(address, config.port, controller.signal);
  } catch (error) {
    if (timedOut && signal?.aborted !== true)
      throw new ConnectError("timeout", `connect to ${address} timed out`);
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

/** EHLO keywords ("PIPELINING", "STARTTLS", "SMTPUTF8", …) from the lines after the greeting line. */
export function parseEhloKeywords(text: string): Set<string> {
  const keywords = new Set<string>();
  for (const line of text.split("\n").slice(1)) {
    const keyword = line.trim().split(/\s+/)[0];
    if (keyword !== undefined && keyword !== "") keywords.add(keyword.toUpperCase());
  }
  return keywords;
}

/** "530 5.7.0 Must issue a STARTTLS command first" (Postfix smtpd_tls_security_level=encrypt). */
export function demandsStartTls(reply: SmtpReply): boolean {
  return reply.code === 530 || (reply.code >= 500 && /starttls/i.test(reply.text));
}

async function greet(
  conn: SmtpConnection,
  config: SessionConfig,
  report: SessionReport,
): Promise<Set<string> | null> {
  conn.send([`EHLO ${config.heloName}`]);
  const ehlo = await conn.read(config.commandTimeoutMs);
  if (ehlo.code === 250) {
    report.ehlo = ehlo.text;
    return parseEhloKeywords(ehlo.text);
  }
  // RFC 5321 §3.2: a server that doesn't know EHLO answers 5xx (500/502); HELO then, without
  // extensions. 4xx and 421 are refusals to talk at all.
  if (ehlo.code >= 500) {
    conn.send([`HELO ${config.heloName}`]);
    const helo = await conn.read(config.commandTimeoutMs);
    if (helo.code === 250) {
      report.ehlo = helo.text;
      return new Set();
    }
    report.failure = { reason: sessionFailureReason(helo), reply: helo };
    return null;
  }
  report.failure = { reason: sessionFailureReason(ehlo), reply: ehlo };
  return null;
}

/** STARTTLS, the handshake, and EHLO again. "refused": the server said no; stay in plain text. */
async function startTls(
  conn: SmtpConnection,
  config: SessionConfig,
  report: SessionReport,
): Promise<Set<string> | null | "refused" | "failed"> {
  conn.send(["STARTTLS"]);
  const ready = await conn.read(config.commandTimeoutMs);
  if (ready.code !== 220) return "refused";
  try {
    await conn.upgradeToTls(report.hostName ?? "", config.commandTimeoutMs);
  } catch (error) {
    if (error instanceof SmtpProtocolError || error instanceof SmtpTimeoutError) return "failed";
    throw error;
  }
  report.tls = true;
  // RFC 3207 §4.2: the session starts over; EHLO again and forget the plaintext extensions.
  return greet(conn, config, report);
}

/**
 * EHLO on a connection that has not had it (and STARTTLS when offered and wanted); null when
 * the conversation may go on, else how the connection ended.
 */
export async function greetConnection(
  conn: SmtpConnection,
  config: SessionConfig,
  report: SessionReport,
  live: LiveConnection,
  useTls: boolean,
): Promise<ConnectionEnd | null> {
  report.tls = false;
  const keywords = await greet(conn, config, report);
  if (keywords === null) return FINISHED;
  live.keywords = keywords;
  live.greeted = true;
  if (useTls && keywords.has("STARTTLS")) return upgradeToTls(conn, config, report, live);
  return null;
}

/** STARTTLS on a greeted connection; null when the conversation may go on (under TLS or not). */
export async function upgradeToTls(
  conn: SmtpConnection,
  config: SessionConfig,
  report: SessionReport,
  live: LiveConnection,
): Promise<ConnectionEnd | null> {
  const upgraded = await startTls(conn, config, report);
  if (upgraded === "failed")
    return { kind: "continue", why: "tls_failed", failure: { reason: "smtp_protocol_error" } };
  if (upgraded === "refused") {
    live.errors++;
    return null;
  }
  if (upgraded === null) return FINISHED;
  live.keywords = upgraded;
  return null;
}
