// One probe session: reach the best mail host that answers, greet it, and ask RCPT for a list
// of same-domain addresses in as few round trips and transactions as the server allows.
// Never sends DATA. The verdict about each address is made elsewhere; this returns replies.
import { AbortedError } from "../abort.ts";
import type { HostGate } from "../ports.ts";
import type { MailHost } from "../resolve-domain.ts";
import type { UnknownReason } from "../types.ts";
import { settleTransaction, takeChunk, isTooManyRecipients } from "./chunking.ts";
import { ConnectError, type ConnectFailureKind, type ConnectPort } from "./connect.ts";
import { SmtpClosedError, SmtpConnection, SmtpTimeoutError } from "./connection.ts";
import { SmtpProtocolError, type SmtpReply } from "./reply-reader.ts";
import { sessionFailureReason } from "./replies.ts";

export interface SessionConfig {
  port: number;
  heloName: string;
  mailFrom: string;
  connectTimeoutMs: number;
  greetingTimeoutMs: number;
  commandTimeoutMs: number;
  maxRcpt: number;
}

export interface SessionDeps {
  connect: ConnectPort;
  hostGate: HostGate;
}

export interface SessionRequest {
  /** Hosts in preference order, each with at least one address. */
  hosts: readonly MailHost[];
  /** Canonical, unique addresses; asked in this order (put the catch-all probe first). */
  recipients: readonly string[];
  signal?: AbortSignal;
}

export interface SessionFailure {
  reason: UnknownReason;
  /** The reply that ended the session, when a reply did. */
  reply?: SmtpReply;
}

export interface SessionReport {
  /** Host that gave a banner, else the last host tried; null when none was tried. */
  hostName: string | null;
  hostAddress: string | null;
  /** A 220 banner was received. */
  greeted: boolean;
  greeting: string;
  ehlo: string;
  /** Final RCPT reply per recipient that got one. */
  replies: Map<string, SmtpReply>;
  /** Why recipients without a reply have none; null when every recipient was answered. */
  failure: SessionFailure | null;
  /** RCPT commands sent in each transaction, in order. */
  rcptPerTransaction: number[];
  /** Settles once QUIT is done, the socket closed and the host gate released. */
  done: Promise<void>;
}

// RFC 5321 §5.1 asks clients to try MX hosts in order; five covers every real provider
// (Google publishes five) while bounding the time a dead domain can cost.
const MAX_HOSTS_TRIED = 5;

/** Runs the session. Never throws for network or protocol outcomes: they end up in `failure`. */
export async function runSession(
  req: SessionRequest,
  config: SessionConfig,
  deps: SessionDeps,
): Promise<SessionReport> {
  const report: SessionReport = {
    hostName: null,
    hostAddress: null,
    greeted: false,
    greeting: "",
    ehlo: "",
    replies: new Map(),
    failure: null,
    rcptPerTransaction: [],
    done: Promise.resolve(),
  };
  const opened = await openSession(req, config, deps, report);
  if (opened === null) return report;
  const { conn, release } = opened;

  const onAbort = (): void => conn.interrupt(new AbortedError());
  req.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await converse(conn, req, config, report);
  } catch (error) {
    report.failure ??= { reason: reasonForError(error, req.signal) };
  } finally {
    req.signal?.removeEventListener("abort", onAbort);
    // QUIT is polite but its 221 tells us nothing: the caller gets the report now and the
    // connection winds down in the background (the engine awaits `done` on close()).
    report.done = conn.quit(config.commandTimeoutMs).finally(release);
  }
  return report;
}

type Opened = { conn: SmtpConnection; release: () => void };

/** Connect phase: falls back to the next host on connect failure or a close before the banner. */
async function openSession(
  req: SessionRequest,
  config: SessionConfig,
  deps: SessionDeps,
  report: SessionReport,
): Promise<Opened | null> {
  const failures: ConnectFailureKind[] = [];
  for (const host of req.hosts.slice(0, MAX_HOSTS_TRIED)) {
    const address = host.addresses[0];
    if (address === undefined) continue;
    report.hostName = host.name;
    report.hostAddress = address;

    let release: () => void;
    try {
      release = await deps.hostGate.acquire(host.name, req.signal);
    } catch (error) {
      if (req.signal?.aborted === true) return fail(report, { reason: "timeout_smtp" });
      throw error;
    }
    if (req.signal?.aborted === true) {
      release();
      return fail(report, { reason: "timeout_smtp" });
    }

    let conn: SmtpConnection;
    try {
      conn = new SmtpConnection(await connectWithTimeout(deps.connect, address, config, req.signal));
    } catch (error) {
      release();
      if (error instanceof ConnectError) {
        failures.push(error.kind);
        continue;
      }
      if (error instanceof AbortedError) return fail(report, { reason: "timeout_smtp" });
      throw error;
    }

    const onAbort = (): void => conn.interrupt(new AbortedError());
    req.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const banner = await conn.read(config.greetingTimeoutMs, "greeting");
      report.greeting = banner.text;
      if (banner.code !== 220) {
        // "554 5.7.1 ... blocked using zen.spamhaus.org" or "421 4.7.0 Too many connections" at
        // connect: the host refuses us, not a mailbox. Its siblings share the policy; stop here.
        report.failure = { reason: sessionFailureReason(banner), reply: banner };
        report.done = conn.quit(config.commandTimeoutMs).finally(release);
        return null;
      }
      report.greeted = true;
      return { conn, release };
    } catch (error) {
      conn.destroy();
      const closed = conn.closed.then(release);
      if (error instanceof SmtpClosedError && !isAborted(req.signal)) {
        await closed;
        failures.push("dropped");
        continue;
      }
      // A silent banner is a tarpit: another 15 s on a sibling host would only repeat it.
      report.done = closed;
      return fail(report, { reason: reasonForError(error, req.signal) });
    } finally {
      req.signal?.removeEventListener("abort", onAbort);
    }
  }
  return fail(report, { reason: connectFailureReason(failures) });
}

// A function, not an inline check: TypeScript would keep an `aborted` narrowing across awaits.
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function fail(report: SessionReport, failure: SessionFailure): null {
  report.failure = failure;
  return null;
}

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

function reasonForError(error: unknown, signal: AbortSignal | undefined): UnknownReason {
  if (error instanceof AbortedError || signal?.aborted === true) return "timeout_smtp";
  if (error instanceof SmtpTimeoutError) return "smtp_timeout";
  if (error instanceof SmtpClosedError) return "connection_dropped";
  if (error instanceof SmtpProtocolError) return "smtp_protocol_error";
  throw error;
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
function demandsStartTls(reply: SmtpReply): boolean {
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

const isPositive = (reply: SmtpReply): boolean => reply.code >= 200 && reply.code < 300;
const hasNonAscii = (s: string): boolean => /[^\p{ASCII}]/u.test(s);

/** EHLO, then transactions of at most `limit` RCPTs until every recipient has a reply. */
async function converse(
  conn: SmtpConnection,
  req: SessionRequest,
  config: SessionConfig,
  report: SessionReport,
): Promise<void> {
  let keywords = await greet(conn, config, report);
  if (keywords === null) return;
  let startedTls = false;
  let queue = [...req.recipients];
  let limit = Math.max(1, config.maxRcpt);
  let needsRset = false;

  while (queue.length > 0) {
    const { chunk, rest } = takeChunk(queue, limit);
    const pipelining = keywords.has("PIPELINING");
    // RFC 6531 §3.4: a UTF-8 local part needs the SMTPUTF8 parameter when the server offers it.
    const utf8 = keywords.has("SMTPUTF8") && chunk.some(hasNonAscii) ? " SMTPUTF8" : "";
    const mailCommand = `MAIL FROM:<${config.mailFrom}>${utf8}`;
    const rcptReplies: SmtpReply[] = [];
    report.rcptPerTransaction.push(0);
    const countRcpt = (n: number): void => {
      const last = report.rcptPerTransaction.length - 1;
      report.rcptPerTransaction[last] = (report.rcptPerTransaction[last] ?? 0) + n;
    };

    let mailReply: SmtpReply | undefined;
    try {
      if (pipelining) {
        // RFC 2920: RSET, MAIL and RCPT may all share one write; replies come back in order.
        conn.send([...(needsRset ? ["RSET"] : []), mailCommand, ...chunk.map((a) => `RCPT TO:<${a}>`)]);
        countRcpt(chunk.length);
        if (needsRset) {
          const rset = await conn.read(config.commandTimeoutMs);
          if (rset.code !== 250) {
            report.failure = { reason: sessionFailureReason(rset), reply: rset };
            return;
          }
        }
        mailReply = await conn.read(config.commandTimeoutMs);
        // After a 421 the server hangs up: the RCPT replies will never come.
        for (let i = 0; i < chunk.length && mailReply.code !== 421; i++) {
          const reply = await conn.read(config.commandTimeoutMs);
          rcptReplies.push(reply);
          if (reply.code === 421) break; // the server is closing; no more replies will come
        }
      } else {
        if (needsRset) {
          conn.send(["RSET"]);
          const rset = await conn.read(config.commandTimeoutMs);
          if (rset.code !== 250) {
            report.failure = { reason: sessionFailureReason(rset), reply: rset };
            return;
          }
        }
        conn.send([mailCommand]);
        mailReply = await conn.read(config.commandTimeoutMs);
        if (isPositive(mailReply)) {
          for (const address of chunk) {
            conn.send([`RCPT TO:<${address}>`]);
            countRcpt(1);
            const reply = await conn.read(config.commandTimeoutMs);
            rcptReplies.push(reply);
            if (reply.code === 421) break;
          }
        }
      }
    } catch (error) {
      // Replies already read are real answers (when MAIL was accepted); keep them.
      if (mailReply === undefined || !isPositive(mailReply)) throw error;
      chunk.forEach((address, i) => {
        const reply = rcptReplies[i];
        if (reply !== undefined && !isTooManyRecipients(reply)) report.replies.set(address, reply);
      });
      throw error;
    }

    if (!isPositive(mailReply)) {
      if (demandsStartTls(mailReply) && keywords.has("STARTTLS") && !startedTls) {
        keywords = await startTls(conn, config, report);
        if (keywords === null) return;
        startedTls = true;
        needsRset = false;
        continue;
      }
      // The sender was refused ("553 5.7.1 Sender address rejected", "451 4.7.1 greylisted"
      // at MAIL): nothing was learnt about any recipient, and no later transaction would fare better.
      report.failure = { reason: sessionFailureReason(mailReply), reply: mailReply };
      return;
    }

    const settled = settleTransaction(chunk, rcptReplies, limit);
    for (const { item, reply } of settled.answered) {
      if (reply.code === 421) continue;
      report.replies.set(item, reply);
    }
    const closing = rcptReplies.find((r) => r.code === 421);
    if (closing !== undefined) {
      // "421 4.7.0 Too many connections/errors, closing transmission channel" mid-way.
      report.failure = { reason: sessionFailureReason(closing), reply: closing };
      return;
    }
    queue = [...settled.resend, ...rest];
    limit = settled.nextLimit;
    needsRset = true;
  }
}

async function startTls(
  conn: SmtpConnection,
  config: SessionConfig,
  report: SessionReport,
): Promise<Set<string> | null> {
  conn.send(["STARTTLS"]);
  const ready = await conn.read(config.commandTimeoutMs);
  if (ready.code !== 220) {
    report.failure = { reason: sessionFailureReason(ready), reply: ready };
    return null;
  }
  await conn.upgradeToTls(report.hostName ?? "", config.commandTimeoutMs);
  // RFC 3207 §4.2: the session starts over; EHLO again and forget the plaintext extensions.
  return greet(conn, config, report);
}
