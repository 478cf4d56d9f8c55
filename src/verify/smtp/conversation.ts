// The conversation on one connection: writes of RSET/MAIL and RCPTs (pipelined when the server
// offers PIPELINING), sized by `nextPace`, until every recipient has a reply or the connection
// can do no more. Never sends DATA.
import { isErrorReply, isTooManyRecipients, nextPace, settleWrite } from "./chunking.ts";
import { SmtpClosedError, type SmtpConnection } from "./connection.ts";
import { demandsStartTls, greetConnection, upgradeToTls } from "./greeting.ts";
import { nextChunk, type Isolation } from "./isolation.ts";
import type { LiveConnection } from "./live-connection.ts";
import { limitScope } from "./limit-scope.ts";
import { refusesOurVolume } from "./provider-pace.ts";
import type { SmtpReply } from "./reply-reader.ts";
import { failureOf, isAborted } from "./session-errors.ts";
import {
  DONE,
  FINISHED,
  type ConnectionEnd,
  type SessionConfig,
  type SessionReport,
} from "./session-types.ts";

const isPositive = (reply: SmtpReply): boolean => reply.code >= 200 && reply.code < 300;
const hasNonAscii = (s: string): boolean => /[^\p{ASCII}]/u.test(s);

/** What one connection is to ask, and what the session knows of that connection. */
export interface Asking {
  conn: SmtpConnection;
  pending: readonly string[];
  config: SessionConfig;
  report: SessionReport;
  live: LiveConnection;
  useTls: boolean;
  isolation: Isolation;
}

/** `converse`, with a drop anywhere turned into "continue on a new connection". */
export async function converseOrDrop(
  asking: Asking,
  signal: AbortSignal | undefined,
): Promise<ConnectionEnd> {
  try {
    return await converse(asking);
  } catch (error) {
    if (error instanceof SmtpClosedError && !isAborted(signal))
      return {
        kind: "continue",
        why: "dropped",
        failure: { reason: "connection_dropped" },
        // A connection taken over that closed before its first reply suspects nobody.
        ...(asking.live.stale ? { stale: true } : { inFlight: asking.live.inFlight }),
      };
    throw error;
  }
}

/** One connection's conversation under way: what is left to ask, and the open transaction's count. */
interface Talk {
  conn: SmtpConnection;
  config: SessionConfig;
  report: SessionReport;
  live: LiveConnection;
  isolation: Isolation;
  /** Recipients still to ask on this connection, in order. */
  queue: string[];
  rcptInTransaction: number;
}

/**
 * One connection: EHLO and STARTTLS when offered (unless it was taken over already greeted),
 * then writes of RCPTs paced by `nextPace` until every recipient has a reply or the connection
 * can do no more.
 */
async function converse({
  conn,
  pending,
  config,
  report,
  live,
  useTls,
  isolation,
}: Asking): Promise<ConnectionEnd> {
  if (!live.greeted) {
    const ended = await greetConnection(conn, config, report, live, useTls);
    if (ended !== null) return ended;
  }
  const talk: Talk = { conn, config, report, live, isolation, queue: [...pending], rcptInTransaction: 0 };
  for (;;) {
    const pace = nextPace({
      errors: live.errors,
      errorBudget: Math.max(1, config.errorBudget),
      rcptInTransaction: talk.rcptInTransaction,
      transactionLimit: live.limits.transaction,
      rcptOnConnection: live.rcptOnConnection,
      connectionLimit: live.limits.connection,
      pending: talk.queue.length,
    });
    if (pace.kind === "done") return DONE;
    if (pace.kind === "reconnect") {
      return { kind: "continue", why: pace.why, failure: { reason: "temporary_failure" } };
    }
    const chunk = nextChunk(talk.queue, pace.size, isolation);
    const write = await writeChunk(talk, chunk, pace.newTransaction);
    const refused = await refusedBeforeRcpt(talk, write);
    if (refused === "retry") continue;
    if (refused !== null) return refused;
    const ended = settleRcpts(talk, chunk, write);
    if (ended !== null) return ended;
  }
}

/** Sends one write and counts what it cost: RCPTs per transaction, error replies on the connection. */
async function writeChunk(talk: Talk, chunk: string[], newTransaction: boolean): Promise<WriteResult> {
  const { live, report } = talk;
  live.inFlight = chunk;
  const write = await exchange(
    talk.conn,
    chunk,
    talk.config,
    live.keywords,
    newTransaction && live.needsRset,
    newTransaction,
  );
  live.stale = false;
  if (newTransaction) {
    talk.rcptInTransaction = 0;
    live.needsRset = true;
    report.rcptPerTransaction.push(0);
  }
  const last = report.rcptPerTransaction.length - 1;
  report.rcptPerTransaction[last] = (report.rcptPerTransaction[last] ?? 0) + write.rcptSent;
  live.errors +=
    write.drainedErrors +
    [write.rset, write.mail, ...write.rcpt].filter((r) => r !== null && isErrorReply(r)).length;
  return write;
}

/**
 * A refused RSET or MAIL: how the connection ends, or "retry" once STARTTLS was done on demand;
 * null when the write went on to its RCPTs.
 */
async function refusedBeforeRcpt(talk: Talk, write: WriteResult): Promise<ConnectionEnd | "retry" | null> {
  const { live, report } = talk;
  if (write.rset !== null && write.rset.code !== 250) {
    report.failure = failureOf(write.rset);
    return FINISHED;
  }
  if (write.mail === null || isPositive(write.mail)) return null;
  // A 421 closes this connection only, unless it refuses our volume (Outlook.com says 4.7.650 here).
  if (write.mail.code === 421 && !refusesOurVolume(write.mail)) {
    return { kind: "continue", why: "closed", failure: failureOf(write.mail), closing: write.mail };
  }
  if (demandsStartTls(write.mail) && live.keywords.has("STARTTLS") && !report.tls) {
    // "530 5.7.0 Must issue a STARTTLS command first": redo the greeting under TLS.
    const ended = await upgradeToTls(talk.conn, talk.config, report, live);
    if (ended !== null) return ended;
    live.needsRset = false;
    talk.rcptInTransaction = 0;
    return "retry";
  }
  // The sender was refused ("553 5.7.1 Sender address rejected", "451 4.7.1 greylisted"
  // at MAIL): nothing was learnt about any recipient, and no later transaction would fare better.
  report.failure = failureOf(write.mail);
  return FINISHED;
}

/**
 * Takes in the RCPT replies of a write: the answered leave the queue, the unanswered go back to
 * its head. Then what they say about the connection: how it ends, or null to write on.
 */
function settleRcpts(talk: Talk, chunk: string[], write: WriteResult): ConnectionEnd | null {
  const { live, report, isolation } = talk;
  const settled = settleWrite(chunk, write.rcpt, {
    rcptInTransactionBefore: talk.rcptInTransaction,
    rcptOnConnectionBefore: live.rcptOnConnection,
  });
  const closingAt = write.rcpt.findIndex((r) => r.code === 421);
  const closing = closingAt < 0 ? undefined : write.rcpt[closingAt];
  const unanswered = new Set(chunk);
  for (const { item, reply } of settled.answered) {
    if (reply.code === 421) continue;
    report.replies.set(item, reply);
    unanswered.delete(item);
    isolation.suspects.delete(item);
  }
  const taken = write.rcpt.length - settled.resend.length - (closing === undefined ? 0 : 1);
  talk.rcptInTransaction += taken;
  live.rcptOnConnection += taken;
  talk.queue.splice(0, chunk.length);
  talk.queue.unshift(...chunk.filter((a) => unanswered.has(a)));
  live.inFlight = chunk.filter((a) => unanswered.has(a));

  if (closing !== undefined) return closedOn(closing, chunk[closingAt], report);
  if (write.cut !== null) throw write.cut;
  // A server that says we go too fast ("450 4.7.1 Error: too many recipients from …") will say
  // it to every further RCPT, on this connection or a new one: stop asking, retry later. A
  // per-recipient refusal ("450 4.2.1 The user you are trying to contact is receiving mail too
  // quickly") concerns that mailbox only: the others go on.
  const throttled = write.rcpt.find((r) => r.code >= 400 && r.code < 500 && limitScope(r) === "client");
  if (throttled !== undefined) {
    report.failure = failureOf(throttled);
    return FINISHED;
  }
  if (settled.transactionLimit !== null) {
    live.limits.transaction = settled.transactionLimit;
    talk.rcptInTransaction = live.limits.transaction;
  }
  if (settled.connectionLimit !== null) {
    live.limits.connection = settled.connectionLimit;
    return { kind: "continue", why: "connection_limit", failure: { reason: "temporary_failure" } };
  }
  return null;
}

/** A 421 to a RCPT: the end of the session when it limits us, else of this connection. */
function closedOn(closing: SmtpReply, recipient: string | undefined, report: SessionReport): ConnectionEnd {
  const scope = limitScope(closing);
  // A limit on us: every further RCPT, here or on a new connection, would get it too.
  if (scope === "client") {
    report.failure = failureOf(closing);
    return FINISHED;
  }
  return {
    kind: "continue",
    why: "closed",
    failure: failureOf(closing),
    closing,
    ...(scope === "recipient" ? { culprit: recipient } : {}),
  };
}

interface WriteResult {
  rset: SmtpReply | null;
  mail: SmtpReply | null;
  /** RCPT replies in order; fewer than sent when the server closed or stopped answering. */
  rcpt: SmtpReply[];
  rcptSent: number;
  /** The error that ended reading early (after MAIL was accepted), or null. */
  cut: Error | null;
  /** Error replies to RCPTs that followed a refused MAIL in the same pipelined write. */
  drainedErrors: number;
}

/**
 * One write of RSET/MAIL and RCPTs: with PIPELINING (RFC 2920) all in one packet, replies read
 * in order; without it, in lock-step, and no RCPT after a refused MAIL.
 */
async function exchange(
  conn: SmtpConnection,
  chunk: readonly string[],
  config: SessionConfig,
  keywords: ReadonlySet<string>,
  rset: boolean,
  mail: boolean,
): Promise<WriteResult> {
  // RFC 6531 §3.4: a UTF-8 local part needs the SMTPUTF8 parameter when the server offers it.
  const utf8 = keywords.has("SMTPUTF8") && chunk.some(hasNonAscii) ? " SMTPUTF8" : "";
  const mailCommand = `MAIL FROM:<${config.mailFrom}>${utf8}`;
  const rcptCommands = chunk.map((a) => `RCPT TO:<${a}>`);
  const result: WriteResult = { rset: null, mail: null, rcpt: [], rcptSent: 0, cut: null, drainedErrors: 0 };
  const read = (): Promise<SmtpReply> => conn.read(config.commandTimeoutMs);
  const pipelining = keywords.has("PIPELINING");

  if (pipelining) {
    conn.send([...(rset ? ["RSET"] : []), ...(mail ? [mailCommand] : []), ...rcptCommands]);
    result.rcptSent = chunk.length;
  }
  if (rset) {
    if (!pipelining) conn.send(["RSET"]);
    result.rset = await read();
    if (result.rset.code !== 250) return result;
  }
  if (mail) {
    if (!pipelining) conn.send([mailCommand]);
    result.mail = await read();
    // After a refusal the pipelined RCPTs only earn "503 need MAIL"; after a 421 nothing comes.
    if (!isPositive(result.mail)) {
      if (pipelining && result.mail.code !== 421)
        result.drainedErrors = await drain(conn, chunk.length, config);
      return result;
    }
  }
  try {
    for (const command of rcptCommands) {
      if (!pipelining) {
        conn.send([command]);
        result.rcptSent++;
      }
      const reply = await read();
      result.rcpt.push(reply);
      // The server is closing; no more replies will come.
      if (reply.code === 421) break;
      if (!pipelining && isTooManyRecipients(reply)) break;
    }
  } catch (error) {
    // Replies already read are real answers; the caller keeps them and then rethrows.
    result.cut = error instanceof Error ? error : new Error(String(error));
  }
  return result;
}

/** Reads the replies to RCPTs pipelined behind a refused MAIL; returns how many were errors. */
async function drain(conn: SmtpConnection, n: number, config: SessionConfig): Promise<number> {
  let errors = 0;
  try {
    for (let i = 0; i < n; i++) {
      const reply = await conn.read(config.commandTimeoutMs);
      if (isErrorReply(reply)) errors++;
      if (reply.code === 421) break;
    }
  } catch {
    // The connection is going away; what it would have said no longer matters.
  }
  return errors;
}
