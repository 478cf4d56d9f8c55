// One probe session: reach the best mail host that answers, greet it, and ask RCPT for a list
// of same-domain addresses in as few round trips as the server's limits allow. Never sends DATA.
// The verdict about each address is made elsewhere; this returns replies.
//
// A session may span several connections to the host that greeted us, one after the other
// (never two at once): when a connection has spent its error budget, when the server keeps a
// per-connection recipient limit, or when it closed mid-way (421, a drop, a failed TLS
// handshake), the recipients left unanswered continue on a fresh connection at once.
//
// One recipient must not poison the rest: a RCPT that makes the server close (a 421 naming no
// client-level cause, or a drop) marks its recipient as the culprit; the others continue on a
// new connection without it, and the culprit is asked once more, alone, at the end. When a drop
// cut a pipelined write short, the culprit is one of the unanswered: the next writes are halved
// until it stands alone (bisection).
//
// Connections are slotted per server IP address, the grain at which servers count them, and a
// connection whose conversation ended well is parked (idle-connections.ts) for the next domain
// served from the same IP.
//
// The parts, bottom up: session-types.ts (shapes and bounds), session-errors.ts, live-connection.ts
// (a connection's lifecycle), session-slots.ts (host slots and pace), greeting.ts (banner, EHLO,
// STARTTLS), isolation.ts (bisection), conversation.ts (the RCPT writes), open-session.ts (host
// fallback); this file runs them: one identity's connections, then the other identities.
import { sleep } from "../../lib/sleep.ts";
import { AbortedError } from "../abort.ts";
import type { EgressIdentity, HostSlot } from "../ports.ts";
import type { SmtpConnection } from "./connection.ts";
import { converseOrDrop } from "./conversation.ts";
import { DEFAULT_EGRESS, providerOf, restReasonOf } from "./egress.ts";
import { reconnect } from "./greeting.ts";
import { isolate, type Isolation } from "./isolation.ts";
import { endConnection, freshConnection, idleOf, parkable, type LiveConnection } from "./live-connection.ts";
import { openSession, type Opened } from "./open-session.ts";
import { usageOf, volumeRefusalOf, type PaceTicket } from "./provider-pace.ts";
import { reasonForError } from "./session-errors.ts";
import type { PaceHold } from "./session-slots.ts";
import {
  MAX_IDLE_CONNECTIONS,
  MAX_ISOLATED,
  SERVER_SETTLE_MS,
  type ConnectionEnd,
  type ContinueEnd,
  type SessionConfig,
  type SessionDeps,
  type SessionFailure,
  type SessionReport,
  type SessionRequest,
} from "./session-types.ts";

/**
 * Runs the session. Never throws for network or protocol outcomes: they end up in `failure`.
 *
 * With several egress identities, an identity whose connection drew a blocklist or throttling
 * reply aimed at our IP is sent to rest for the server's provider, and the recipients it could
 * not get answered are asked again at once from another identity: a user would not accept
 * "ip_blocklisted" for an address another of our IPs can still ask. When every identity has been
 * refused, the host gate decides (the batch gate defers the group like a busy host); without
 * one, the last answer stands.
 */
export async function runSession(
  req: SessionRequest,
  config: SessionConfig,
  deps: SessionDeps,
): Promise<SessionReport> {
  const identities = deps.egress ?? [{ id: DEFAULT_EGRESS, connect: deps.connect }];
  if (identities.length <= 1 || deps.hostGate.rest === undefined)
    return runOneIdentity(req, config, deps, identities, new Set());
  const excluded = new Set<string>();
  const dones: Promise<void>[] = [];
  let merged: SessionReport | null = null;
  let recipients: SessionRequest["recipients"] = req.recipients;
  let hosts: SessionRequest["hosts"] = req.hosts;
  // Bounded: each round excludes one more identity.
  for (let round = 0; round < identities.length; round++) {
    const report = await runOneIdentity({ ...req, hosts, recipients }, config, deps, identities, excluded);
    dones.push(report.done);
    merged = merged === null ? report : mergeReports(merged, report);
    const refusal = egressRefusal(report);
    if (refusal === null || report.egress === null || report.hostAddress === null) break;
    const provider = providerOf(report.hostName, report.hostAddress);
    merged.rested.push(report.egress);
    excluded.add(report.egress);
    try {
      await deps.hostGate.rest(report.egress, report.hostAddress, provider, refusal.reason);
    } catch (error) {
      // The gate defers the whole group: let this session's connections wind down first.
      await Promise.all(dones);
      throw error;
    }
    if (identities.every((i) => excluded.has(i.id))) break;
    for (const a of refusal.recipients) merged.replies.delete(a);
    recipients = refusal.recipients;
    // The same server, from another identity: the refusal was about us, not about that host.
    hosts = [{ name: report.hostName ?? report.hostAddress, preference: 0, addresses: [report.hostAddress] }];
  }
  merged!.done = Promise.all(dones).then(() => undefined);
  if (merged!.recipients.every((a) => merged!.replies.has(a))) merged!.failure = null;
  return merged!;
}

/**
 * The recipients an identity could not get answered because the server refused the identity
 * itself (the session's failure, or RCPT replies that blocklist us), and why; null when the
 * server judged no one but the recipients.
 */
function egressRefusal(
  report: SessionReport,
): { reason: NonNullable<ReturnType<typeof restReasonOf>>; recipients: string[] } | null {
  const failureReason = report.failure === null ? null : failureRestReason(report.failure);
  const refusedReplies = report.recipients.filter((a) => restReasonOf(report.replies.get(a)) !== null);
  const unanswered = failureReason === null ? [] : report.recipients.filter((a) => !report.replies.has(a));
  const recipients = [...refusedReplies, ...unanswered];
  if (recipients.length === 0) return null;
  const reason = failureReason ?? restReasonOf(report.replies.get(refusedReplies[0]!)) ?? "ip_blocklisted";
  return { reason, recipients };
}

/** A failure with a reply is judged by it (a mailbox's "receiving mail too quickly" is no rest). */
function failureRestReason(failure: SessionFailure): ReturnType<typeof restReasonOf> {
  if (failure.reply !== undefined) return restReasonOf(failure.reply);
  return failure.reason === "ip_blocklisted" || failure.reason === "rate_limited" ? failure.reason : null;
}

/** One report of a session that continued from another identity: the later answers win. */
function mergeReports(first: SessionReport, next: SessionReport): SessionReport {
  for (const [a, reply] of next.replies) first.replies.set(a, reply);
  return {
    ...next,
    greeted: first.greeted || next.greeted,
    greeting: next.greeted ? next.greeting : first.greeting,
    ehlo: next.greeted ? next.ehlo : first.ehlo,
    recipients: first.recipients,
    replies: first.replies,
    rcptPerTransaction: [...first.rcptPerTransaction, ...next.rcptPerTransaction],
    connections: first.connections + next.connections,
    reused: first.reused || next.reused,
    isolated: [...first.isolated, ...next.isolated],
    reconnects: [...first.reconnects, ...next.reconnects],
    rested: first.rested,
    volumeRefusal: next.volumeRefusal ?? first.volumeRefusal,
    paced: next.paced ?? first.paced,
  };
}

/** One identity's connections to one server, one at a time, and what has been asked on them. */
interface Run {
  readonly address: string;
  readonly identity: EgressIdentity;
  readonly release: HostSlot;
  conn: SmtpConnection;
  live: LiveConnection;
  /** The current connection ends with QUIT (not after the server's 421 or a drop). */
  politeEnd: boolean;
  /** The session ended well: its connection may serve the next domain at this IP. */
  park: boolean;
  /** Recipients still to ask, in order (the isolated are asked alone at the end). */
  pending: string[];
  /** The isolated recipient the next connection asks alone, if any. */
  alone: string | null;
  askedAlone: Set<string>;
  isolation: Isolation;
  useTls: boolean;
  /** Connections in a row that answered nobody. */
  idle: number;
  maxConnections: number;
}

async function runOneIdentity(
  req: SessionRequest,
  config: SessionConfig,
  deps: SessionDeps,
  identities: readonly EgressIdentity[],
  excluded: ReadonlySet<string>,
): Promise<SessionReport> {
  const report = emptyReport();
  let planned: readonly string[] | undefined;
  const plan = (): readonly string[] =>
    (planned ??= typeof req.recipients === "function" ? req.recipients() : req.recipients);
  const pace: PaceHold = { ticket: null };
  const opened = await openSession(req, config, deps, report, { identities, excluded, plan, pace });
  report.recipients = [...plan()];
  const ticket = pace.ticket;
  if (opened === null) {
    if (ticket !== null) await reportPace(deps, ticket, report);
    return report;
  }
  const run = startRun(opened, config, report, ticket);
  const onAbort = (): void => run.conn.interrupt(new AbortedError());
  req.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await askAll(run, config, report, req.signal);
  } catch (error) {
    report.failure ??= { reason: reasonForError(error, req.signal) };
    run.park = false;
  } finally {
    req.signal?.removeEventListener("abort", onAbort);
    parkOrClose(run, config, deps, report, req.signal);
  }
  if (report.recipients.every((a) => report.replies.has(a))) report.failure = null;
  else if (report.failure === null && report.paced !== null) report.failure = { reason: "rate_limited" };
  if (ticket !== null) await reportPace(deps, ticket, report);
  return report;
}

function emptyReport(): SessionReport {
  return {
    hostName: null,
    hostAddress: null,
    greeted: false,
    greeting: "",
    ehlo: "",
    recipients: [],
    replies: new Map(),
    failure: null,
    rcptPerTransaction: [],
    connections: 0,
    reused: false,
    isolated: [],
    reconnects: [],
    tls: false,
    egress: null,
    rested: [],
    volumeRefusal: null,
    paced: null,
    done: Promise.resolve(),
  };
}

function startRun(
  opened: Opened,
  config: SessionConfig,
  report: SessionReport,
  ticket: PaceTicket | null,
): Run {
  const n = report.recipients.length;
  const maxConnections =
    3 +
    2 * Math.ceil(n / Math.max(1, config.errorBudget)) +
    2 * Math.ceil(Math.log2(n + 1)) +
    2 * MAX_ISOLATED;
  let pending = [...report.recipients];
  if (ticket?.grant != null && ticket.grant.granted < pending.length) {
    // The pace has room for the first recipients only (controls first): the rest wait for it.
    report.paced = { provider: ticket.provider, retryAt: null, unasked: pending.slice(ticket.grant.granted) };
    pending = pending.slice(0, ticket.grant.granted);
  }
  return {
    address: opened.address,
    identity: opened.identity,
    release: opened.release,
    conn: opened.conn,
    live: opened.live,
    politeEnd: true,
    park: false,
    pending,
    alone: null,
    askedAlone: new Set(),
    isolation: { suspects: new Set(), cap: Infinity },
    useTls: config.startTls,
    idle: 0,
    maxConnections,
  };
}

/** Connection after connection until every recipient is answered or the session can do no more. */
async function askAll(
  run: Run,
  config: SessionConfig,
  report: SessionReport,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (;;) {
    const answeredBefore = report.replies.size;
    const asking = run.alone === null ? run.pending : [run.alone];
    const end = await converseOrDrop(
      {
        conn: run.conn,
        pending: asking,
        config,
        report,
        live: run.live,
        useTls: run.useTls,
        isolation: run.isolation,
      },
      signal,
    );
    const next = takeStock(run, end, report);
    if (next.step === "stop") return;
    if (next.step === "same_connection") continue;
    const moved = await moveOn(
      run,
      next.end,
      report.replies.size > answeredBefore || next.narrowed,
      config,
      report,
      signal,
    );
    if (!moved) return;
  }
}

/**
 * What a connection's end means for the session: stop, ask the isolated recipient on the same
 * connection, or go on with a new connection (`narrowed`: the bisection learnt something).
 */
function takeStock(
  run: Run,
  end: ConnectionEnd,
  report: SessionReport,
):
  | { step: "stop" }
  | { step: "same_connection" }
  | { step: "new_connection"; end: ContinueEnd; narrowed: boolean } {
  let narrowed = false;
  if (run.alone !== null) {
    // Asked alone and closed on again: that closing reply is its answer.
    if (end.kind === "continue" && end.closing !== undefined && !report.replies.has(run.alone))
      report.replies.set(run.alone, end.closing);
    run.alone = null;
    narrowed = true;
  } else if (end.kind === "continue") {
    const isolated = isolate(end, report, run.isolation);
    if (isolated === "too_many") return { step: "stop" };
    narrowed = isolated === "narrowed";
  }
  run.pending = run.pending.filter((a) => !report.replies.has(a) && !report.isolated.includes(a));
  // Finished with recipients left: the session failed for good (report.failure says why).
  if (end.kind === "finished" && run.pending.length > 0) return { step: "stop" };
  if (end.kind === "continue") report.failure = end.failure;
  if (run.pending.length === 0) {
    const next = report.isolated.find((a) => !run.askedAlone.has(a) && !report.replies.has(a));
    if (next === undefined) {
      run.park = end.kind === "finished" && end.clean;
      return { step: "stop" };
    }
    run.alone = next;
    run.askedAlone.add(next);
    // Still open: the culprit gets a write of its own at the end of this connection.
    if (end.kind === "finished") return { step: "same_connection" };
  }
  if (end.kind === "finished") return { step: "stop" };
  return { step: "new_connection", end, narrowed };
}

/** Ends the connection and opens the next one to the same server; false when the session should stop. */
async function moveOn(
  run: Run,
  end: ContinueEnd,
  progressed: boolean,
  config: SessionConfig,
  report: SessionReport,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  run.politeEnd = end.why === "error_budget" || end.why === "connection_limit";
  run.idle = progressed || end.stale === true ? 0 : run.idle + 1;
  if (run.idle >= MAX_IDLE_CONNECTIONS || report.connections >= run.maxConnections) return false;
  if (end.why === "tls_failed") run.useTls = false;
  report.reconnects.push(run.alone === null ? end.why : "isolate");
  // The server must never see two of our connections from this slot: the old one is gone
  // before the new one opens.
  await endConnection(run.conn, run.politeEnd, config);
  await sleep(SERVER_SETTLE_MS, signal);
  const next = await reconnect(run.address, config, run.identity.connect, report, signal);
  if (next === null) return false;
  run.conn = next;
  // What the server's refusals taught about its limits holds on every connection to it.
  run.live = freshConnection(config, run.live.limits);
  run.politeEnd = true;
  return true;
}

/** The last connection is parked for the next domain at this IP, or wound down in the background. */
function parkOrClose(
  run: Run,
  config: SessionConfig,
  deps: SessionDeps,
  report: SessionReport,
  signal: AbortSignal | undefined,
): void {
  const idleConnections = deps.idle;
  if (
    run.park &&
    run.politeEnd &&
    idleConnections !== undefined &&
    parkable(run.conn, run.live, config, signal) &&
    run.release.keepIdle?.() !== false
  ) {
    idleConnections.put(idleOf(run.address, run.identity.id, run.conn, run.release, run.live, report));
  } else {
    // QUIT is polite but its 221 tells us nothing: the caller gets the report now and the
    // connection winds down in the background (the engine awaits `done` on close()).
    report.done = endConnection(run.conn, run.politeEnd, config)
      .then(() => sleep(SERVER_SETTLE_MS))
      .finally(run.release);
  }
}

/** Tells the pace what the session asked; a provider that refused our volume marks the report paced. */
async function reportPace(deps: SessionDeps, ticket: PaceTicket, report: SessionReport): Promise<void> {
  report.volumeRefusal = volumeRefusalOf(report);
  const retryAt = await deps.pace!.port.report(usageOf(ticket, report, report.volumeRefusal));
  if (report.volumeRefusal === null && report.paced === null) return;
  report.paced = { provider: ticket.provider, retryAt, unasked: report.paced?.unasked ?? [] };
}
