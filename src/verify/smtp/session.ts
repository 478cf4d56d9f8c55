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
import type { Clock } from "../../lib/clock.ts";
import { sleep } from "../../lib/sleep.ts";
import { AbortedError } from "../abort.ts";
import type { ProviderPace } from "../pace.ts";
import type { EgressIdentity, HostGate, HostSlot } from "../ports.ts";
import type { MailHost } from "../resolve-domain.ts";
import type { UnknownReason } from "../types.ts";
import { isErrorReply, isTooManyRecipients, nextPace, settleWrite } from "./chunking.ts";
import { ConnectError, type ConnectFailureKind, type ConnectPort } from "./connect.ts";
import { SmtpClosedError, SmtpConnection, SmtpTimeoutError } from "./connection.ts";
import { SmtpProtocolError, type SmtpReply } from "./reply-reader.ts";
import type { ConnectionState, IdleConnection, IdleConnections } from "./idle-connections.ts";
import { DEFAULT_EGRESS, providerOf, restReasonOf } from "./egress.ts";
import { limitScope } from "./limit-scope.ts";
import {
  refuseOrAnswer,
  refusesOurVolume,
  takePace,
  usageOf,
  volumeRefusalOf,
  type PaceTicket,
} from "./provider-pace.ts";
import { sessionFailureReason } from "./replies.ts";

export interface SessionConfig {
  port: number;
  heloName: string;
  mailFrom: string;
  connectTimeoutMs: number;
  greetingTimeoutMs: number;
  commandTimeoutMs: number;
  /** Most RCPTs per transaction (shrunk when the server refuses more). */
  maxRcpt: number;
  /** Most error replies (4xx/5xx) one connection may receive; below Postfix's soft limit of 10. */
  errorBudget: number;
  /** Use STARTTLS when the server offers it (opportunistic; certificates are not checked). */
  startTls: boolean;
}

export interface SessionDeps {
  /** The way out when `egress` is absent. */
  connect: ConnectPort;
  /** Egress identities to leave from (one per connection, chosen by the host gate). */
  egress?: readonly EgressIdentity[];
  /** Slots are keyed by the server IP address connected to. */
  hostGate: HostGate;
  /** Idle connections to continue on, and where this session parks its own; none: QUIT at the end. */
  idle?: IdleConnections;
  /** The providers' paces (docs/pacing.md); none: every provider is asked freely. */
  pace?: { port: ProviderPace; clock: Clock };
}

export interface SessionRequest {
  /**
   * Hosts in preference order, each with at least one address. An async sequence is read one
   * host at a time, only as far as the session falls back (at most MAX_HOSTS_TRIED), so hosts
   * can be looked up as they are needed.
   */
  hosts: Iterable<MailHost> | AsyncIterable<MailHost>;
  /**
   * Canonical, unique addresses, asked in this order (controls first). A function is called
   * once, when the first connection is ready or has failed, so that late joiners get in.
   */
  recipients: readonly string[] | (() => readonly string[]);
  signal?: AbortSignal;
}

export interface SessionFailure {
  reason: UnknownReason;
  /** The reply that ended the session, when a reply did. */
  reply?: SmtpReply;
}

/** Why a session moved on to a new connection. */
export type ReconnectCause =
  | "error_budget"
  | "connection_limit"
  | "closed"
  | "dropped"
  | "tls_failed"
  /** A recipient whose RCPT closed the connection is asked again, alone. */
  | "isolate";

export interface SessionReport {
  /** Host that gave a banner, else the last host tried; null when none was tried. */
  hostName: string | null;
  hostAddress: string | null;
  /** A 220 banner was received. */
  greeted: boolean;
  greeting: string;
  ehlo: string;
  /** The recipients asked (resolved once). */
  recipients: readonly string[];
  /** Final RCPT reply per recipient that got one. */
  replies: Map<string, SmtpReply>;
  /** Why recipients without a reply have none; null when every recipient was answered. */
  failure: SessionFailure | null;
  /** RCPT commands sent in each transaction, in order. */
  rcptPerTransaction: number[];
  /** Connections that got a banner. */
  connections: number;
  /** The session began on an idle connection another session left open (no banner of its own). */
  reused: boolean;
  /** Recipients whose RCPT closed the connection, asked again alone at the end. */
  isolated: string[];
  /** Why each follow-up connection was opened, in order. */
  reconnects: ReconnectCause[];
  /** The last connection ran under TLS. */
  tls: boolean;
  /** The egress identity of the last connection ('' = the default one); null when none was opened. */
  egress: string | null;
  /** Identities that drew a blocklist or throttling reply in this session and were sent to rest. */
  rested: string[];
  /** The RCPT reply that refused our volume (the provider's throttle); null when none did. */
  volumeRefusal: SmtpReply | null;
  /**
   * Set when the provider's pace shaped the session: it refused our volume, or its pace left
   * `unasked` recipients without room. `retryAt`: when the pace has room again.
   */
  paced: { provider: string; retryAt: Date | null; unasked: string[] } | null;
  /** Settles once QUIT is done, the socket closed and the host gate released. */
  done: Promise<void>;
}

// RFC 5321 §5.1 asks clients to try MX hosts in order; five covers every real provider
// (Google publishes five) while bounding the time a dead domain can cost.
const MAX_HOSTS_TRIED = 5;
// A connection that answered nobody is retried once; a second such one ends the session.
const MAX_IDLE_CONNECTIONS = 2;
// A server learns of our close asynchronously (Postfix's anvil counts connections from smtpd's
// disconnect messages): a new connection opened the same instant could briefly count as one too
// many. So the next connection from this session, and the host slot, wait this long after a close.
export const SERVER_SETTLE_MS = 50;

// Recipients whose RCPT closed the connection, at most this many per session: past it the
// server is closing on us, not on them.
const MAX_ISOLATED = 4;

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

async function runOneIdentity(
  req: SessionRequest,
  config: SessionConfig,
  deps: SessionDeps,
  identities: readonly EgressIdentity[],
  excluded: ReadonlySet<string>,
): Promise<SessionReport> {
  const report: SessionReport = {
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
  const { release, address, identity } = opened;
  let conn = opened.conn;
  let live = opened.live;
  let politeEnd = true;
  let park = false;

  const onAbort = (): void => conn.interrupt(new AbortedError());
  req.signal?.addEventListener("abort", onAbort, { once: true });
  const n = report.recipients.length;
  const maxConnections =
    3 +
    2 * Math.ceil(n / Math.max(1, config.errorBudget)) +
    2 * Math.ceil(Math.log2(n + 1)) +
    2 * MAX_ISOLATED;
  const isolation: Isolation = { suspects: new Set(), cap: Infinity };
  const askedAlone = new Set<string>();
  let alone: string | null = null;
  let pending = [...report.recipients];
  if (ticket?.grant != null && ticket.grant.granted < pending.length) {
    // The pace has room for the first recipients only (controls first): the rest wait for it.
    report.paced = { provider: ticket.provider, retryAt: null, unasked: pending.slice(ticket.grant.granted) };
    pending = pending.slice(0, ticket.grant.granted);
  }
  let useTls = config.startTls;
  let idle = 0;
  try {
    for (;;) {
      const answeredBefore = report.replies.size;
      const asking = alone === null ? pending : [alone];
      const end = await converseOrDrop(conn, asking, config, report, live, useTls, isolation, req.signal);
      let narrowed = false;
      if (alone !== null) {
        // Asked alone and closed on again: that closing reply is its answer.
        if (end.kind === "continue" && end.closing !== undefined && !report.replies.has(alone))
          report.replies.set(alone, end.closing);
        alone = null;
        narrowed = true;
      } else if (end.kind === "continue") {
        const isolated = isolate(end, report, isolation);
        if (isolated === "too_many") break;
        narrowed = isolated === "narrowed";
      }
      pending = pending.filter((a) => !report.replies.has(a) && !report.isolated.includes(a));
      // Finished with recipients left: the session failed for good (report.failure says why).
      if (end.kind === "finished" && pending.length > 0) break;
      if (end.kind === "continue") report.failure = end.failure;
      if (pending.length === 0) {
        const next = report.isolated.find((a) => !askedAlone.has(a) && !report.replies.has(a));
        if (next === undefined) {
          park = end.kind === "finished" && end.clean;
          break;
        }
        alone = next;
        askedAlone.add(next);
        // Still open: the culprit gets a write of its own at the end of this connection.
        if (end.kind === "finished") continue;
      }
      if (end.kind === "finished") break;
      politeEnd = end.why === "error_budget" || end.why === "connection_limit";
      idle = report.replies.size > answeredBefore || narrowed || end.stale === true ? 0 : idle + 1;
      if (idle >= MAX_IDLE_CONNECTIONS || report.connections >= maxConnections) break;
      if (end.why === "tls_failed") useTls = false;
      report.reconnects.push(alone === null ? end.why : "isolate");
      // The server must never see two of our connections from this slot: the old one is gone
      // before the new one opens.
      await endConnection(conn, politeEnd, config);
      await sleep(SERVER_SETTLE_MS, req.signal);
      const next = await reconnect(address, config, identity.connect, report, req.signal);
      if (next === null) break;
      conn = next;
      // What the server's refusals taught about its limits holds on every connection to it.
      live = freshConnection(config, live.limits);
      politeEnd = true;
    }
  } catch (error) {
    report.failure ??= { reason: reasonForError(error, req.signal) };
    park = false;
  } finally {
    req.signal?.removeEventListener("abort", onAbort);
    const idleConnections = deps.idle;
    if (
      park &&
      politeEnd &&
      idleConnections !== undefined &&
      parkable(conn, live, config, req.signal) &&
      release.keepIdle?.() !== false
    ) {
      idleConnections.put(idleOf(address, identity.id, conn, release, live, report));
    } else {
      // QUIT is polite but its 221 tells us nothing: the caller gets the report now and the
      // connection winds down in the background (the engine awaits `done` on close()).
      report.done = endConnection(conn, politeEnd, config)
        .then(() => sleep(SERVER_SETTLE_MS))
        .finally(release);
    }
  }
  if (report.recipients.every((a) => report.replies.has(a))) report.failure = null;
  else if (report.failure === null && report.paced !== null) report.failure = { reason: "rate_limited" };
  if (ticket !== null) await reportPace(deps, ticket, report);
  return report;
}

/** Tells the pace what the session asked; a provider that refused our volume marks the report paced. */
async function reportPace(deps: SessionDeps, ticket: PaceTicket, report: SessionReport): Promise<void> {
  report.volumeRefusal = volumeRefusalOf(report);
  const retryAt = await deps.pace!.port.report(usageOf(ticket, report, report.volumeRefusal));
  if (report.volumeRefusal === null && report.paced === null) return;
  report.paced = { provider: ticket.provider, retryAt, unasked: report.paced?.unasked ?? [] };
}

/** Recipients suspected of closing the connection, and the write size that narrows them down. */
interface Isolation {
  suspects: Set<string>;
  /** Most suspects per write while any is unanswered. */
  cap: number;
}

/**
 * What a closed connection says about its culprit: a 421 to one RCPT names it; a drop with one
 * recipient unanswered in the write names it too; a drop with several leaves them suspects, and
 * the next writes take half of them at a time.
 */
function isolate(
  end: Extract<ConnectionEnd, { kind: "continue" }>,
  report: SessionReport,
  isolation: Isolation,
): "isolated" | "narrowed" | "none" | "too_many" {
  const unanswered = (end.inFlight ?? []).filter((a) => !report.replies.has(a));
  const culprit =
    end.culprit ?? (end.why === "dropped" && unanswered.length === 1 ? unanswered[0] : undefined);
  if (culprit !== undefined) {
    if (report.isolated.includes(culprit)) return "none";
    if (report.isolated.length >= MAX_ISOLATED) return "too_many";
    report.isolated.push(culprit);
    isolation.suspects.delete(culprit);
    if (isolation.suspects.size === 0) isolation.cap = Infinity;
    return "isolated";
  }
  if (end.why === "dropped" && unanswered.length > 1) {
    const cap = Math.ceil(unanswered.length / 2);
    if (cap >= isolation.cap) return "none";
    isolation.suspects = new Set(unanswered);
    isolation.cap = cap;
    return "narrowed";
  }
  return "none";
}

/** The per-connection state of a conversation: fresh, or taken over from an idle connection. */
interface LiveConnection {
  /** EHLO done (and STARTTLS when used): keywords are known. */
  greeted: boolean;
  keywords: Set<string>;
  errors: number;
  rcptOnConnection: number;
  /** A transaction may be open: the next one starts with RSET. */
  needsRset: boolean;
  limits: ConnectionLimits;
  /** The recipients of the write in progress, until their replies are in. */
  inFlight: string[];
  /** Taken over from the idle set and not yet heard from in this session. */
  stale: boolean;
}

function freshConnection(config: SessionConfig, learned?: ConnectionLimits): LiveConnection {
  return {
    greeted: false,
    keywords: new Set(),
    errors: 0,
    rcptOnConnection: 0,
    needsRset: false,
    limits: learned ?? { transaction: Math.max(1, config.maxRcpt), connection: null },
    inFlight: [],
    stale: false,
  };
}

function resumedConnection(state: ConnectionState, config: SessionConfig): LiveConnection {
  return {
    greeted: true,
    keywords: new Set(state.keywords),
    errors: state.errors,
    rcptOnConnection: state.rcptOnConnection,
    needsRset: true,
    limits: {
      transaction: Math.min(Math.max(1, config.maxRcpt), state.transactionLimit),
      connection: state.connectionLimit,
    },
    inFlight: [],
    stale: true,
  };
}

/** A connection worth keeping: open, unaborted, and with room in its error budget. */
function parkable(
  conn: SmtpConnection,
  live: LiveConnection,
  config: SessionConfig,
  signal: AbortSignal | undefined,
): boolean {
  if (signal?.aborted === true || !conn.reusable || !live.greeted) return false;
  if (live.errors >= Math.max(1, config.errorBudget) - 1) return false;
  return live.limits.connection === null || live.rcptOnConnection < live.limits.connection;
}

function idleOf(
  address: string,
  egress: string,
  conn: SmtpConnection,
  release: HostSlot,
  live: LiveConnection,
  report: SessionReport,
): IdleConnection {
  return {
    address,
    egress,
    conn,
    release,
    state: {
      keywords: live.keywords,
      tls: report.tls,
      greeting: report.greeting,
      ehlo: report.ehlo,
      errors: live.errors,
      rcptOnConnection: live.rcptOnConnection,
      transactionLimit: live.limits.transaction,
      connectionLimit: live.limits.connection,
    },
  };
}

interface ConnectionLimits {
  transaction: number;
  /** Learned per-connection RCPT limit, or null. */
  connection: number | null;
}

type ConnectionEnd =
  /** Everything asked, or the session failed for good (report.failure says why). */
  | {
      kind: "finished";
      /** Every recipient asked and answered with nothing amiss: the connection may serve another. */
      clean: boolean;
    }
  /** This connection can do no more; the rest may continue on a new one. */
  | {
      kind: "continue";
      why: ReconnectCause;
      failure: SessionFailure;
      /** The recipient whose RCPT the server answered by closing (a 421 about that recipient). */
      culprit?: string;
      /** The server's closing reply (421), when it sent one. */
      closing?: SmtpReply;
      /** The recipients of the write that was cut short. */
      inFlight?: string[];
      /** An idle connection taken over was gone before it answered (the server's idle timeout). */
      stale?: boolean;
    };

const FINISHED: ConnectionEnd = { kind: "finished", clean: false };
const DONE: ConnectionEnd = { kind: "finished", clean: true };

/** After our QUIT the server closes; after its 421 or a drop there is nothing left to say. */
async function endConnection(conn: SmtpConnection, polite: boolean, config: SessionConfig): Promise<void> {
  if (polite) {
    await conn.quit(config.commandTimeoutMs);
    return;
  }
  conn.destroy();
  await conn.closed;
}

type Opened = {
  conn: SmtpConnection;
  release: HostSlot;
  address: string;
  identity: EgressIdentity;
  live: LiveConnection;
};

/** The session's place under its provider's pace, once taken (null: not yet, or no pace port). */
interface PaceHold {
  ticket: PaceTicket | null;
}

/** Whom a session may leave from, what it will ask, and its place under the provider's pace. */
interface OpenPlan {
  identities: readonly EgressIdentity[];
  excluded: ReadonlySet<string>;
  plan: () => readonly string[];
  pace: PaceHold;
}

/** Connect phase: falls back to the next host on connect failure or a close before the banner. */
async function openSession(
  req: SessionRequest,
  config: SessionConfig,
  deps: SessionDeps,
  report: SessionReport,
  { identities, excluded, plan, pace }: OpenPlan,
): Promise<Opened | null> {
  const failures: ConnectFailureKind[] = [];
  const candidates = identities.filter((i) => !excluded.has(i.id));
  const hosts = inOrder(req.hosts);
  // The next host is asked for only after the previous one failed: never one more than tried.
  for (let tried = 0; tried < MAX_HOSTS_TRIED; tried++) {
    const next = await hosts.next();
    if (next.done === true) break;
    const host = next.value;
    const address = host.addresses[0];
    if (address === undefined) continue;
    report.hostName = host.name;
    report.hostAddress = address;

    let slot: Slot;
    const provider = providerOf(host.name, address);
    try {
      const wish = { egress: candidates.map((i) => i.id), provider };
      slot = await acquireSlot(address, deps, wish, req.signal);
    } catch (error) {
      if (req.signal?.aborted === true) return fail(report, { reason: "timeout_smtp" });
      throw error;
    }
    const paced = await paceOf(deps, slot, provider, plan, pace.ticket);
    if (paced?.kind === "no_room") {
      giveBack(slot, deps);
      refuseOrAnswer(deps.pace!.port, address, paced);
      report.paced = { provider, retryAt: paced.roomAt, unasked: [...plan()] };
      return fail(report, { reason: "rate_limited" });
    }
    if (paced !== null) pace.ticket = paced.ticket;
    if (slot.kind === "idle") {
      const { conn, state } = slot.idle;
      if (req.signal?.aborted === true) {
        deps.idle?.put(slot.idle);
        return fail(report, { reason: "timeout_smtp" });
      }
      report.greeted = true;
      report.reused = true;
      report.greeting = state.greeting;
      report.ehlo = state.ehlo;
      report.tls = state.tls;
      report.egress = slot.idle.egress;
      const identity = candidates.find((i) => i.id === slot.idle.egress) ?? candidates[0]!;
      return {
        conn,
        release: slot.idle.release,
        address,
        identity,
        live: resumedConnection(state, config),
      };
    }
    const release = slot.release;
    const taken = slot.release.egress;
    const identity = candidates.find((i) => i.id === taken) ?? candidates[0]!;
    report.egress = identity.id;
    if (req.signal?.aborted === true) {
      release();
      return fail(report, { reason: "timeout_smtp" });
    }

    const greeted = await connectAndGreet(address, config, identity.connect, report, req.signal, failures);
    // A connection that was open (closed before or at its banner) keeps its slot for the
    // server's settle time, like every other close: the next host is another IP, so nothing waits.
    if (greeted.kind === "next") {
      void sleep(SERVER_SETTLE_MS).finally(release);
      continue;
    }
    if (greeted.kind === "failed") {
      report.done = greeted.closed.then(() => sleep(SERVER_SETTLE_MS)).finally(release);
      return null;
    }
    return { conn: greeted.conn, release, address, identity, live: freshConnection(config) };
  }
  // The host sequence ends early when a lookup is cut short by the deadline.
  if (isAborted(req.signal)) return fail(report, { reason: "timeout_smtp" });
  return fail(report, { reason: connectFailureReason(failures) });
}

type Slot = { kind: "idle"; idle: IdleConnection } | { kind: "slot"; release: HostSlot };

/** The egress identity a slot leaves from. */
const egressOfSlot = (slot: Slot): string =>
  slot.kind === "idle" ? slot.idle.egress : (slot.release.egress ?? DEFAULT_EGRESS);

/**
 * The session's place under its provider's pace, once its slot says which identity asks; the
 * place it already holds when it falls back to another host of the same provider and identity.
 */
async function paceOf(
  deps: SessionDeps,
  slot: Slot,
  provider: string,
  plan: () => readonly string[],
  held: PaceTicket | null,
) {
  if (deps.pace === undefined) return null;
  const egress = egressOfSlot(slot);
  if (held !== null && held.provider === provider && held.egress === egress)
    return { kind: "go" as const, ticket: held };
  try {
    return await takePace(deps.pace.port, deps.pace.clock, { provider, egress }, () => plan().length);
  } catch (error) {
    giveBack(slot, deps);
    throw error;
  }
}

/** A place taken but not used: the idle connection goes back to the pool, the slot is freed. */
function giveBack(slot: Slot, deps: SessionDeps): void {
  if (slot.kind === "idle") deps.idle?.put(slot.idle);
  else slot.release();
}

/**
 * A place at the server's IP for one of the wished identities: an idle connection another
 * session left there, or a host-gate slot for a new one, whichever comes first (a session that
 * parks while we wait hands its connection straight over). The loser is given back.
 */
async function acquireSlot(
  address: string,
  deps: SessionDeps,
  wish: { egress: readonly string[]; provider: string },
  signal: AbortSignal | undefined,
): Promise<Slot> {
  const pool = deps.idle;
  for (const egress of wish.egress) {
    const taken = pool?.take(address, egress) ?? null;
    if (taken !== null) return { kind: "idle", idle: taken };
  }
  // Only a gate told of several identities needs the wish; one without identities is called as before.
  const ask = (s: AbortSignal | undefined): Promise<HostSlot> =>
    wish.egress.length === 1 && wish.egress[0] === DEFAULT_EGRESS
      ? deps.hostGate.acquire(address, s)
      : deps.hostGate.acquire(address, s, wish);
  if (pool === undefined) return { kind: "slot", release: await ask(signal) };
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted === true) stop.abort();
  const idles = wish.egress.map((egress) => pool.wait(address, stop.signal, egress));
  const gate = ask(stop.signal);
  let won: Slot | undefined;
  try {
    won = await Promise.race([
      ...idles.map((idle) => idle.then((c): Slot => ({ kind: "idle", idle: c }))),
      gate.then((release): Slot => ({ kind: "slot", release })),
    ]);
    return won;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    stop.abort();
    // Whichever lost, if it got its place after all, gives it back.
    for (const idle of idles)
      idle.then(
        (c) => {
          if (won?.kind !== "idle" || won.idle !== c) pool.put(c);
        },
        () => undefined,
      );
    gate.then(
      (release) => {
        if (won?.kind !== "slot" || won.release !== release) release();
      },
      () => undefined,
    );
  }
}

async function* inOrder(hosts: Iterable<MailHost> | AsyncIterable<MailHost>): AsyncGenerator<MailHost> {
  yield* hosts;
}

type Greeted =
  | { kind: "ready"; conn: SmtpConnection }
  /** Try the next host (connect failure or a close before the banner); nothing left open. */
  | { kind: "next" }
  /** The host refused us or timed out (report.failure set); `closed` settles when the socket is. */
  | { kind: "failed"; closed: Promise<void> };

async function connectAndGreet(
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
async function reconnect(
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

/** `converse`, with a drop anywhere turned into "continue on a new connection". */
async function converseOrDrop(
  conn: SmtpConnection,
  pending: readonly string[],
  config: SessionConfig,
  report: SessionReport,
  live: LiveConnection,
  useTls: boolean,
  isolation: Isolation,
  signal: AbortSignal | undefined,
): Promise<ConnectionEnd> {
  try {
    return await converse(conn, pending, config, report, live, useTls, isolation);
  } catch (error) {
    if (error instanceof SmtpClosedError && !isAborted(signal))
      return {
        kind: "continue",
        why: "dropped",
        failure: { reason: "connection_dropped" },
        // A connection taken over that closed before its first reply suspects nobody.
        ...(live.stale ? { stale: true } : { inFlight: live.inFlight }),
      };
    throw error;
  }
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
 * One connection: EHLO and STARTTLS when offered (unless it was taken over already greeted),
 * then writes of RCPTs paced by `nextPace` until every recipient has a reply or the connection
 * can do no more.
 */
async function converse(
  conn: SmtpConnection,
  pending: readonly string[],
  config: SessionConfig,
  report: SessionReport,
  live: LiveConnection,
  useTls: boolean,
  isolation: Isolation,
): Promise<ConnectionEnd> {
  const limits = live.limits;
  const upgrade = async (): Promise<ConnectionEnd | null> => {
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
  };
  if (!live.greeted) {
    report.tls = false;
    const keywords = await greet(conn, config, report);
    if (keywords === null) return FINISHED;
    live.keywords = keywords;
    live.greeted = true;
    if (useTls && keywords.has("STARTTLS")) {
      const ended = await upgrade();
      if (ended !== null) return ended;
    }
  }

  const queue = [...pending];
  let rcptInTransaction = 0;
  for (;;) {
    const pace = nextPace({
      errors: live.errors,
      errorBudget: Math.max(1, config.errorBudget),
      rcptInTransaction,
      transactionLimit: limits.transaction,
      rcptOnConnection: live.rcptOnConnection,
      connectionLimit: limits.connection,
      pending: queue.length,
    });
    if (pace.kind === "done") return DONE;
    if (pace.kind === "reconnect") {
      return { kind: "continue", why: pace.why, failure: { reason: "temporary_failure" } };
    }
    // While a drop's suspects are unanswered, they go a few at a time (bisection).
    const capped = queue.some((a) => isolation.suspects.has(a));
    if (!capped) {
      isolation.suspects.clear();
      isolation.cap = Infinity;
    }
    const chunk = queue.slice(0, capped ? Math.min(pace.size, isolation.cap) : pace.size);
    live.inFlight = chunk;
    const write = await exchange(
      conn,
      chunk,
      config,
      live.keywords,
      pace.newTransaction && live.needsRset,
      pace.newTransaction,
    );
    live.stale = false;
    if (pace.newTransaction) {
      rcptInTransaction = 0;
      live.needsRset = true;
      report.rcptPerTransaction.push(0);
    }
    const last = report.rcptPerTransaction.length - 1;
    report.rcptPerTransaction[last] = (report.rcptPerTransaction[last] ?? 0) + write.rcptSent;
    live.errors +=
      write.drainedErrors +
      [write.rset, write.mail, ...write.rcpt].filter((r) => r !== null && isErrorReply(r)).length;

    if (write.rset !== null && write.rset.code !== 250) {
      report.failure = { reason: sessionFailureReason(write.rset), reply: write.rset };
      return FINISHED;
    }
    if (write.mail !== null && !isPositive(write.mail)) {
      // A 421 closes this connection only, unless it refuses our volume (Outlook.com says 4.7.650 here).
      if (write.mail.code === 421 && !refusesOurVolume(write.mail)) {
        return { kind: "continue", why: "closed", failure: failureOf(write.mail), closing: write.mail };
      }
      if (demandsStartTls(write.mail) && live.keywords.has("STARTTLS") && !report.tls) {
        // "530 5.7.0 Must issue a STARTTLS command first": redo the greeting under TLS.
        const ended = await upgrade();
        if (ended !== null) return ended;
        live.needsRset = false;
        rcptInTransaction = 0;
        continue;
      }
      // The sender was refused ("553 5.7.1 Sender address rejected", "451 4.7.1 greylisted"
      // at MAIL): nothing was learnt about any recipient, and no later transaction would fare better.
      report.failure = failureOf(write.mail);
      return FINISHED;
    }
    const settled = settleWrite(chunk, write.rcpt, {
      rcptInTransactionBefore: rcptInTransaction,
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
    rcptInTransaction += taken;
    live.rcptOnConnection += taken;
    queue.splice(0, chunk.length);
    queue.unshift(...chunk.filter((a) => unanswered.has(a)));
    live.inFlight = chunk.filter((a) => unanswered.has(a));

    if (closing !== undefined) {
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
        ...(scope === "recipient" ? { culprit: chunk[closingAt] } : {}),
      };
    }
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
      limits.transaction = settled.transactionLimit;
      rcptInTransaction = limits.transaction;
    }
    if (settled.connectionLimit !== null) {
      limits.connection = settled.connectionLimit;
      return { kind: "continue", why: "connection_limit", failure: { reason: "temporary_failure" } };
    }
  }
}

const failureOf = (reply: SmtpReply): SessionFailure => ({ reason: sessionFailureReason(reply), reply });

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
