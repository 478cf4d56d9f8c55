// The shapes every part of a probe session shares (session.ts, greeting.ts, conversation.ts,
// isolation.ts, …), and the bounds they agree on. The bottom of smtp/'s session files: it
// imports none of them.
import type { Clock } from "../../lib/clock.ts";
import type { ConnectPort } from "../ports.ts";
import type { EgressIdentity, HostGate, ProviderPace } from "../ports.ts";
import type { MailHost } from "../resolve-domain.ts";
import type { UnknownReason } from "../types.ts";
import type { IdleConnections } from "./idle-connections.ts";
import type { SmtpReply } from "./reply-reader.ts";

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

/** How one connection's conversation ended, and whether the session may go on without it. */
export type ConnectionEnd =
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

export type ContinueEnd = Extract<ConnectionEnd, { kind: "continue" }>;

export const FINISHED: ConnectionEnd = { kind: "finished", clean: false };
export const DONE: ConnectionEnd = { kind: "finished", clean: true };

// RFC 5321 §5.1 asks clients to try MX hosts in order; five covers every real provider
// (Google publishes five) while bounding the time a dead domain can cost.
export const MAX_HOSTS_TRIED = 5;
// A connection that answered nobody is retried once; a second such one ends the session.
export const MAX_IDLE_CONNECTIONS = 2;
// A server learns of our close asynchronously (Postfix's anvil counts connections from smtpd's
// disconnect messages): a new connection opened the same instant could briefly count as one too
// many. So the next connection from this session, and the host slot, wait this long after a close.
export const SERVER_SETTLE_MS = 50;

// Recipients whose RCPT closed the connection, at most this many per session: past it the
// server is closing on us, not on them.
export const MAX_ISOLATED = 4;
