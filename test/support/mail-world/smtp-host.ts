// One simulated MX host: a `smtp-server` SMTPServer behind our own net.Server on the host's
// loopback address. Owning the listener lets us count and shape every connection before
// smtp-server sees it (fixed connect replies, drops, rate limits) and delay every reply.
//
// Latency model: every byte the host writes leaves `latencyMs` after smtp-server produced it,
// in order (a delay queue in front of socket.write/end; after STARTTLS, in front of the TLS
// socket's). That is a network round trip: a client that pipelines N commands gets N replies
// after one latency, a lock-step client pays N latencies. smtp-server itself adds a fixed 100 ms
// before the banner (its early-talker check); bannerDelayMs and latencyMs come on top of that.
// Postfix-style error sleeps (softErrorLimit) come before the latency, reply by reply, and the
// next command is only processed once the previous reply has left (Postfix sleeps in its
// single-threaded reply path, so it reads nothing meanwhile).
//
// Command counting: every LF-terminated line the client sends counts as a command (EHLO, MAIL,
// RCPT, RSET, NOOP, QUIT, DATA, junk…), lines that arrive after the host gave up on the session
// included. DATA is always refused, so no message body is ever read and every line received is a
// command line. The same line reader records protocol violations (see HostCounters.violations).

import net from "node:net";
import { performance } from "node:perf_hooks";
import { SMTPServer } from "smtp-server";
import type { SMTPServerAddress, SMTPServerSession } from "smtp-server";

import {
  closeOnRcptFor,
  closeOnRcptReply,
  configuredUnknownUser,
  crossTenantReply,
  errorLimits,
  greylistApplies,
  greylistReply,
  isRoleAddress,
  receivingTooQuicklyReply,
  roleExists,
  senderBlockReply,
  throttleReply,
  tooManyConnectionsReply,
} from "./rules.ts";
import type { ErrorLimits } from "./rules.ts";
import type { RcptThrottles } from "./throttle.ts";
import type { ClientCounters, DomainSpec, FixedReply, HostCounters, HostSpec, ServerKind } from "./types.ts";

/** What a persona needs to know to phrase a reply. `text` may hold several lines separated by "\n". */
interface Reply {
  code: number;
  text: string;
}

// ---------------------------------------------------------------------------------------------
// Personas: the wording of each server kind. Kept close to what the real systems say so that an
// engine's provider detection and reply classification are exercised on realistic text.

interface Persona {
  greeting(host: string): string;
  /** smtp-server heloResponse format: host name, then the client's [ip]. */
  heloResponse: string;
  size?: number;
  /** false: PIPELINING is not advertised. Default true. */
  pipelining?: boolean;
  mailOk(): string;
  rcptOk(): string;
  bye(): string;
  unknownUser(address: string, host: string): Reply;
  mailboxFull(address: string): Reply;
  disabled(address: string): Reply;
}

let traceSeq = 0;
/** Google and Microsoft append a per-transaction trace id; a counter makes it unique enough. */
function traceId(): string {
  traceSeq = (traceSeq + 1) % 1_000_000;
  return `a640c23a62f3a-${traceSeq.toString(36)}si`;
}

function rfc2822Now(): string {
  return new Date().toUTCString().replace("GMT", "+0000");
}

const POSTFIX: Persona = {
  greeting: (host) => `${host} ESMTP Postfix`,
  heloResponse: "%s",
  size: 10_240_000,
  mailOk: () => "2.1.0 Ok",
  rcptOk: () => "2.1.5 Ok",
  bye: () => "2.0.0 Bye",
  unknownUser: (address) => ({
    code: 550,
    text: `5.1.1 <${address}>: Recipient address rejected: User unknown in virtual mailbox table`,
  }),
  mailboxFull: (address) => ({ code: 552, text: `5.2.2 <${address}>: Mailbox full` }),
  disabled: (address) => ({
    code: 550,
    text: `5.2.1 <${address}>: The email account that you tried to reach is disabled`,
  }),
};

const GOOGLE: Persona = {
  greeting: (host) => `${host} ESMTP ${traceId()} - gsmtp`,
  heloResponse: "%s at your service, %s",
  size: 157_286_400,
  mailOk: () => `2.1.0 OK ${traceId()} - gsmtp`,
  rcptOk: () => `2.1.5 OK ${traceId()} - gsmtp`,
  bye: () => `2.0.0 closing connection ${traceId()} - gsmtp`,
  unknownUser: () => ({
    code: 550,
    text: [
      "5.1.1 The email account that you tried to reach does not exist. Please try",
      "5.1.1 double-checking the recipient's email address for typos or",
      "5.1.1 unnecessary spaces. For more information, go to",
      `5.1.1  https://support.google.com/mail/?p=NoSuchUser ${traceId()} - gsmtp`,
    ].join("\n"),
  }),
  mailboxFull: () => ({
    code: 552,
    text: [
      "5.2.2 The email account that you tried to reach is over quota. Please direct",
      `5.2.2 the recipient to https://support.google.com/mail/?p=OverQuotaPerm ${traceId()} - gsmtp`,
    ].join("\n"),
  }),
  disabled: () => ({
    code: 550,
    text: [
      "5.2.1 The email account that you tried to reach is disabled. Learn more at",
      `5.2.1  https://support.google.com/mail/?p=DisabledUser ${traceId()} - gsmtp`,
    ].join("\n"),
  }),
};

const MICROSOFT365: Persona = {
  greeting: (host) => `${host} Microsoft ESMTP MAIL Service ready at ${rfc2822Now()}`,
  heloResponse: "%s Hello %s",
  size: 157_286_400,
  mailOk: () => "2.1.0 Sender OK",
  rcptOk: () => "2.1.5 Recipient OK",
  bye: () => "2.0.0 Service closing transmission channel",
  unknownUser: (_address, host) => ({
    code: 550,
    text: `5.4.1 Recipient address rejected: Access denied. AS(201806281) [${host}]`,
  }),
  mailboxFull: () => ({ code: 552, text: "5.2.2 Mailbox full; STOREDRV.Deliver: mailbox quota exceeded" }),
  disabled: () => ({ code: 550, text: "5.2.1 The email account that you tried to reach is disabled" }),
};

const OUTLOOK: Persona = {
  ...MICROSOFT365,
  unknownUser: () => ({
    code: 550,
    text: "5.5.0 Requested action not taken: mailbox unavailable (S2017062302). [DM6NAM12FT045.eop-nam12.prod.protection.outlook.com]",
  }),
};

const YAHOO: Persona = {
  greeting: (host) => `${host} ESMTP ready`,
  heloResponse: "%s",
  size: 41_943_040,
  mailOk: () => "2.1.0 sender ok",
  rcptOk: () => "2.1.5 recipient ok",
  bye: () => "2.0.0 Bye",
  // Yahoo really uses 552 for an unknown user: an engine must read the text, not just the code.
  unknownUser: () => ({ code: 552, text: "1 Requested mail action aborted, mailbox not found" }),
  mailboxFull: () => ({ code: 552, text: "5.2.2 Mailbox full" }),
  disabled: () => ({ code: 550, text: "5.2.1 The email account that you tried to reach is disabled" }),
};

const EXIM: Persona = {
  greeting: (host) => `${host} ESMTP Exim 4.96 ${rfc2822Now()}`,
  heloResponse: "%s Hello %s",
  size: 52_428_800,
  mailOk: () => "2.1.0 OK",
  rcptOk: () => "2.1.5 Accepted",
  bye: () => "2.0.0 closing connection",
  unknownUser: () => ({ code: 550, text: "5.1.1 Unrouteable address" }),
  mailboxFull: (address) => ({ code: 552, text: `5.2.2 <${address}>: Mailbox full` }),
  disabled: () => ({ code: 550, text: "5.2.1 The email account that you tried to reach is disabled" }),
};

const PROOFPOINT: Persona = {
  ...POSTFIX,
  greeting: (host) => `${host} ESMTP mfa-m0${(traceSeq + 101).toString()} pps`,
  heloResponse: "%s Hello %s, pleased to meet you",
  unknownUser: () => ({ code: 550, text: "5.1.1 User Unknown" }),
};

const MIMECAST: Persona = {
  ...POSTFIX,
  greeting: (host) => `${host} ESMTP Mimecast Ltd. ${traceId()}`,
  heloResponse: "%s Hello %s",
  unknownUser: () => ({
    code: 550,
    text: "Invalid Recipient - https://community.mimecast.com/docs/DOC-1369#550 [fTJx9bYQOlq2Dg.uk1]",
  }),
};

const GENERIC: Persona = { ...POSTFIX, greeting: (host) => `${host} ESMTP` };

// OpenSMTPD's texts (smtp_session.c); its EHLO has no PIPELINING. A name missing from a virtual
// table: lka_session.c's "524 5.2.4 Mailing list expansion problem", sent with ": <rcpt>" appended.
const OPENSMTPD: Persona = {
  greeting: (host) => `${host} ESMTP OpenSMTPD`,
  heloResponse: "%s Hello %s, pleased to meet you",
  size: 36_700_160,
  pipelining: false,
  mailOk: () => "2.0.0 Ok",
  rcptOk: () => "2.1.5 Destination address valid: Recipient ok",
  bye: () => "2.0.0 Bye",
  unknownUser: (address) => ({ code: 524, text: `5.2.4 Mailing list expansion problem: <${address}>` }),
  mailboxFull: (address) => ({ code: 552, text: `5.2.2 <${address}>: Mailbox full` }),
  disabled: (address) => ({ code: 550, text: `5.2.1 <${address}>: Mailbox disabled` }),
};

// Exchange Server on premises, recipient filtering on.
const EXCHANGE: Persona = {
  ...MICROSOFT365,
  size: 37_748_736,
  unknownUser: () => ({
    code: 550,
    text: "5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup",
  }),
  mailboxFull: () => ({ code: 552, text: "5.2.2 STOREDRV.Deliver; mailbox full" }),
};

const PERSONAS: Record<ServerKind, Persona> = {
  google: GOOGLE,
  microsoft365: MICROSOFT365,
  outlook: OUTLOOK,
  yahoo: YAHOO,
  postfix: POSTFIX,
  exim: EXIM,
  proofpoint: PROOFPOINT,
  mimecast: MIMECAST,
  generic: GENERIC,
  opensmtpd: OPENSMTPD,
  exchange: EXCHANGE,
};

const DATA_REFUSED = "5.7.1 Message refused: this is a simulated mail host, it never accepts DATA";
const TOO_MANY_RCPT: Reply = { code: 452, text: "4.5.3 Too many recipients" };
/** Postfix smtpd_tls_security_level = encrypt, before STARTTLS. */
const MUST_STARTTLS = "5.7.0 Must issue a STARTTLS command first";

// ---------------------------------------------------------------------------------------------

export interface GreylistVerdict {
  admitted: boolean;
  /** Whole seconds until the triplet is admitted (0 once admitted). */
  secondsLeft: number;
  /** When the triplet was first seen (epoch ms). */
  firstAttemptAt: number;
  /** true on the first attempt that got through. */
  firstPass: boolean;
}

/** First-seen times of (client, sender, recipient) triplets, shared by every host of a world. */
export class Greylist {
  private readonly triplets = new Map<string, { first: number; passed: boolean }>();

  /** The first attempt of a triplet is refused; it is admitted once `seconds` have passed since. */
  check(key: string, seconds: number): GreylistVerdict {
    const now = Date.now();
    const entry = this.triplets.get(key);
    if (!entry) {
      this.triplets.set(key, { first: now, passed: false });
      return { admitted: false, secondsLeft: Math.ceil(seconds), firstAttemptAt: now, firstPass: false };
    }
    const left = seconds * 1000 - (now - entry.first);
    if (left > 0) {
      return {
        admitted: false,
        secondsLeft: Math.ceil(left / 1000),
        firstAttemptAt: entry.first,
        firstPass: false,
      };
    }
    const firstPass = !entry.passed;
    entry.passed = true;
    return { admitted: true, secondsLeft: 0, firstAttemptAt: entry.first, firstPass };
  }

  /** true once `seconds` have passed since the triplet's first attempt (which itself is refused). */
  admits(key: string, seconds: number): boolean {
    return this.check(key, seconds).admitted;
  }
}

/** A domain as the host sees it: lowercase local-part sets for constant-time RCPT decisions. */
interface ServedDomain {
  spec: DomainSpec;
  mailboxes: Set<string>;
  full: Set<string>;
  disabled: Set<string>;
  senderBlocked: Set<string>;
  busy: Set<string>;
}

export interface SmtpHostConfig {
  /** Normalized (lowercase) host name, or a front end's label; also the smtp-server `name`. */
  name: string;
  spec: HostSpec;
  address: string;
  latencyMs: number;
  /** Domains routed to this host (MX target or A-only address; every member's, for a front end). */
  domains: readonly DomainSpec[];
  greylist: Greylist;
  /** The world's quotas (HostSpec.throttle names one of them). */
  throttles: RcptThrottles;
}

interface SessionState {
  id: string;
  /** The counters object current when the session opened; per-session counts go to it only. */
  counters: HostCounters;
  index: number;
  rcptInTransaction: number;
  /** RCPT commands that reached recipient processing in this connection (maxRcptPerConnection). */
  rcptInSession: number;
  /** The tenant (domain) of the transaction's first accepted RCPT (tenantAttribution). */
  tenant: string | undefined;
  /** Ends the connection once the replies already owed have left (set once smtp-server has it). */
  closeConnection: (() => void) | undefined;
  /** Error replies sent so far (the Postfix error_count). */
  errors: number;
  /** The hard error limit was hit: nothing more is processed or said but the 421. */
  dead: boolean;
  /** performance.now() when a 421 of this session reached the wire. */
  after421At: number | undefined;
  /** Protocol state as seen from the client's lines (violations). */
  quitSeen: boolean;
  mailSeen: boolean;
  /** Command lines received and replies produced, for the no-PIPELINING check. */
  linesIn: number;
  repliesOut: number;
  /** Unterminated tail of the last chunk. */
  partial: string;
  violations: Set<string>;
  /** Replies waiting for their error sleep, in order. */
  paceQueue: { sleepMs: number; run: () => void }[];
  pacing: boolean;
  sockets: net.Socket[];
  /** The client IP the connection came from. */
  client: string;
}

function emptyCounters(open = 0): HostCounters {
  return {
    connections: 0,
    concurrent: open,
    maxConcurrent: open,
    commands: 0,
    rcptPerSession: [],
    rcptByAddress: {},
    errorsPerSession: [],
    tlsSessions: 0,
    violations: [],
    greylistPassed: [],
    connectionLimitRefusals: 0,
    crossTenantRefusals: 0,
    byClient: {},
  };
}

/** The client IP as servers log it: IPv4 without the "::ffff:" of a dual-stack socket. */
function clientOf(socket: net.Socket): string {
  return (socket.remoteAddress ?? "unknown").replace(/^::ffff:/, "");
}

function newState(id: string, counters: HostCounters, index: number, socket?: net.Socket): SessionState {
  return {
    id,
    counters,
    index,
    rcptInTransaction: 0,
    rcptInSession: 0,
    tenant: undefined,
    closeConnection: undefined,
    errors: 0,
    dead: false,
    after421At: undefined,
    quitSeen: false,
    mailSeen: false,
    linesIn: 0,
    repliesOut: 0,
    partial: "",
    violations: new Set(),
    paceQueue: [],
    pacing: false,
    sockets: socket ? [socket] : [],
    client: socket ? clientOf(socket) : "unknown",
  };
}

const lowerSet = (list: readonly string[] | undefined): Set<string> =>
  new Set((list ?? []).map((s) => s.toLowerCase()));

function serve(spec: DomainSpec): ServedDomain {
  return {
    spec,
    mailboxes: lowerSet(spec.mailboxes),
    full: lowerSet(spec.fullMailboxes),
    disabled: lowerSet(spec.disabledMailboxes),
    senderBlocked: lowerSet(spec.senderBlockedMailboxes),
    busy: lowerSet(spec.busyMailboxes),
  };
}

function fixedLine(reply: FixedReply | Reply): string {
  return `${reply.code.toString()} ${reply.text}`;
}

class ReplyError extends Error {
  constructor(
    readonly responseCode: number,
    text: string,
  ) {
    super(text);
  }
}

/** The verb of a command line, for violation texts. */
function verbOf(line: string): string {
  return /^\s*([A-Za-z]+)/.exec(line)?.[1]?.toUpperCase() ?? "(non-command line)";
}

export class SmtpHost {
  readonly name: string;
  readonly address: string;
  private readonly spec: HostSpec;
  private readonly kind: ServerKind;
  private readonly persona: Persona;
  private readonly latencyMs: number;
  private readonly limits: ErrorLimits | undefined;
  private readonly pipelining: boolean;
  private readonly domains: Map<string, ServedDomain>;
  private readonly greylist: Greylist;
  private readonly throttles: RcptThrottles;
  private readonly smtp: SMTPServer;
  private server: net.Server | undefined;
  private stats: HostCounters = emptyCounters();
  private connectionsSinceStart = 0;
  private sessionSeq = 0;
  private readonly sessions = new Map<string, SessionState>();
  private readonly sockets = new Set<net.Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(config: SmtpHostConfig) {
    this.name = config.name;
    this.address = config.address;
    this.spec = config.spec;
    this.kind = config.spec.kind ?? "postfix";
    this.persona = PERSONAS[this.kind];
    this.latencyMs = config.latencyMs;
    this.limits = errorLimits(config.spec);
    this.pipelining = config.spec.pipelining ?? this.persona.pipelining ?? true;
    this.greylist = config.greylist;
    this.throttles = config.throttles;
    this.domains = new Map(config.domains.map((d) => [d.name.toLowerCase(), serve(d)]));
    this.smtp = this.createSmtpServer();
  }

  get refusesConnections(): boolean {
    return this.spec.refuseConnections === true;
  }

  counters(): HostCounters {
    const s = this.stats;
    return {
      ...s,
      rcptPerSession: [...s.rcptPerSession],
      rcptByAddress: { ...s.rcptByAddress },
      errorsPerSession: [...s.errorsPerSession],
      byClient: Object.fromEntries(Object.entries(s.byClient).map(([ip, c]) => [ip, { ...c }])),
      violations: [...s.violations],
      greylistPassed: s.greylistPassed.map((p) => ({ ...p })),
    };
  }

  resetCounters(): void {
    this.stats = emptyCounters(this.sessions.size);
    for (const state of this.sessions.values()) {
      const c = this.clientStats(state.client);
      c.concurrent++;
      c.maxConcurrent = Math.max(c.maxConcurrent, c.concurrent);
    }
  }

  /**
   * Listens on address:port (0 = any free port) and returns the bound port. A host that refuses
   * connections only checks that the port is free on its address, then stops listening again.
   */
  async listen(port: number): Promise<number> {
    const server = net.createServer((socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, this.address, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const bound = (server.address() as net.AddressInfo).port;
    if (this.refusesConnections) await closeServer(server);
    else this.server = server;
    return bound;
  }

  /** Stops listening and drops every open connection right away (no 421 grace period). */
  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await closeServer(server);
  }

  private createSmtpServer(): SMTPServer {
    const startTls = this.spec.startTls !== undefined;
    const smtp = new SMTPServer({
      name: this.name,
      logger: false,
      disabledCommands: [
        "AUTH",
        "XCLIENT",
        "XFORWARD",
        "WIZ",
        "SHELL",
        "KILL",
        ...(startTls ? [] : ["STARTTLS"]),
      ],
      // STARTTLS uses smtp-server's built-in self-signed certificate (no key material here).
      hideSTARTTLS: !startTls,
      hideREQUIRETLS: true,
      hidePIPELINING: !this.pipelining,
      // No real DNS lookups from a simulated host: the machine may have no resolver at all.
      disableReverseLookup: true,
      heloResponse: this.persona.heloResponse,
      ...(this.persona.size === undefined ? {} : { size: this.persona.size }),
      onConnect: (_session, callback) => this.later(this.spec.bannerDelayMs ?? 0, () => callback()),
      onSecure: (socket, session, callback) => {
        this.secured(socket, session.id);
        callback();
      },
      onMailFrom: (_address, session, callback) => {
        const state = this.session(session.id);
        state.rcptInTransaction = 0;
        state.tenant = undefined;
        callback();
      },
      onRcptTo: (address, session, callback) => {
        const state = this.session(session.id);
        if (state.counters === this.stats) {
          const rcpt = address.address.toLowerCase();
          this.stats.rcptByAddress[rcpt] = (this.stats.rcptByAddress[rcpt] ?? 0) + 1;
        }
        const reply = this.rcptDecision(address, session);
        if (reply === "drop") {
          // No reply, ever: `dead` silences smtp-server and swallows whatever was pipelined.
          state.dead = true;
          state.closeConnection?.();
          callback(null);
          return;
        }
        callback(reply ? new ReplyError(reply.code, reply.text) : null);
      },
      onClose: (session) => this.endSession(session.id),
    });
    // Client resets mid-transaction surface here; they are the client's business, not ours.
    smtp.on("error", () => undefined);
    return smtp;
  }

  private accept(socket: net.Socket): void {
    socket.on("error", () => undefined);
    const id = `${this.name}#${(++this.sessionSeq).toString()}`;
    const state = this.track(socket, id);
    delayWrites(socket, this.latencyMs);
    const fixed = this.fixedGreeting(socket);
    if (fixed) {
      state.repliesOut = 1;
      if (fixed.code >= 400) this.countError(state);
      this.readLines(socket, state);
      this.later(this.spec.bannerDelayMs ?? 0, () => {
        if (fixed.code === 421) this.mark421(state);
        socket.end(`${fixedLine(fixed)}\r\n`);
      });
      return;
    }
    this.smtp.connect(socket, { id });
    this.personalize(state);
    // After connect(): smtp-server has piped the socket, so this listener misses nothing.
    this.readLines(socket, state);
  }

  private track(socket: net.Socket, id: string): SessionState {
    const stats = this.stats;
    this.connectionsSinceStart++;
    stats.connections++;
    stats.concurrent++;
    stats.maxConcurrent = Math.max(stats.maxConcurrent, stats.concurrent);
    const index = stats.rcptPerSession.push(0) - 1;
    stats.errorsPerSession.push(0);
    const state = newState(id, stats, index, socket);
    this.sessions.set(id, state);
    const client = this.clientStats(state.client);
    client.connections++;
    client.concurrent++;
    client.maxConcurrent = Math.max(client.maxConcurrent, client.concurrent);
    this.sockets.add(socket);
    // smtp-server drops this listener when it upgrades the socket to TLS; onSecure and onClose
    // take over then (endSession is idempotent).
    socket.once("close", () => this.endSession(id));
    return state;
  }

  private endSession(id: string): void {
    const state = this.sessions.get(id);
    if (!state) return;
    this.sessions.delete(id);
    for (const socket of state.sockets) this.sockets.delete(socket);
    this.stats.concurrent = Math.max(0, this.stats.concurrent - 1);
    const client = this.clientStats(state.client);
    client.concurrent = Math.max(0, client.concurrent - 1);
  }

  /** STARTTLS completed: the TLS socket replaces the raw one for latency, line reading and close. */
  private secured(socket: net.Socket, id: string): void {
    const state = this.sessions.get(id);
    if (!state) return;
    this.stats.tlsSessions++;
    state.sockets.push(socket);
    this.sockets.add(socket);
    state.partial = "";
    state.mailSeen = false;
    socket.on("error", () => undefined);
    socket.once("close", () => this.endSession(id));
    delayWrites(socket, this.latencyMs);
    this.readLines(socket, state);
  }

  private clientStats(client: string): ClientCounters {
    const existing = this.stats.byClient[client];
    if (existing !== undefined) return existing;
    const fresh: ClientCounters = { connections: 0, concurrent: 0, maxConcurrent: 0, refusals: 0 };
    this.stats.byClient[client] = fresh;
    return fresh;
  }

  /** The reply that replaces the SMTP session, if this connection gets one. */
  private fixedGreeting(socket: net.Socket): Reply | undefined {
    // Postfix anvil counts the connection being accepted too: over the limit once it is in.
    const concurrency = this.spec.frontEndMaxConnections;
    if (concurrency !== undefined && this.sessions.size > concurrency) {
      this.stats.connectionLimitRefusals++;
      return tooManyConnectionsReply(this.name, socket.remoteAddress ?? "unknown");
    }
    const client = clientOf(socket);
    if (this.spec.blockedClients?.includes(client) === true) {
      this.clientStats(client).refusals++;
      return {
        code: 554,
        text: `5.7.1 Service unavailable; Client host [${client}] blocked using zen.spamhaus.org`,
      };
    }
    const perClient = this.spec.maxConnectionsPerClient;
    if (perClient !== undefined && this.clientStats(client).concurrent > perClient) {
      this.clientStats(client).refusals++;
      return tooManyConnectionsReply(this.name, client);
    }
    const limit = this.spec.rateLimitAfterConnections;
    if (limit !== undefined && this.connectionsSinceStart > limit) {
      return { code: 421, text: `4.7.0 ${this.name} Too many connections from your IP, try again later` };
    }
    if (this.spec.connectReply) return this.spec.connectReply;
    if (this.spec.dropAfterBanner) return { code: 220, text: this.persona.greeting(this.name) };
    return undefined;
  }

  private readLines(socket: net.Socket, state: SessionState): void {
    socket.on("data", (chunk: Buffer) => {
      const arrivedAt = performance.now();
      const lines = (state.partial + chunk.toString("latin1")).split("\n");
      // A verb is all we need from an unterminated line; don't let a junk stream grow it.
      state.partial = (lines.pop() ?? "").slice(0, 64);
      if (lines.length === 0) return;
      if (!this.pipelining && !state.dead && state.after421At === undefined) {
        // +1: the banner is owed before any command may be sent.
        const unanswered = state.linesIn + 1 - state.repliesOut;
        if (unanswered > 0 || lines.length > 1) {
          this.violation(state, "pipelined commands without PIPELINING advertised");
        }
      }
      state.linesIn += lines.length;
      for (const line of lines) this.onCommandLine(line, state, arrivedAt);
    });
  }

  private onCommandLine(line: string, state: SessionState, arrivedAt: number): void {
    this.stats.commands++;
    const verb = verbOf(line);
    if (state.after421At !== undefined && arrivedAt >= state.after421At && verb !== "QUIT") {
      this.violation(state, `${verb} after 421`);
    }
    if (state.quitSeen) this.violation(state, `${verb} after QUIT`);
    switch (verb) {
      case "QUIT":
        state.quitSeen = true;
        break;
      case "MAIL":
        state.mailSeen = true;
        break;
      case "RSET":
      case "EHLO":
      case "HELO":
      case "STARTTLS":
        state.mailSeen = false;
        break;
      case "RCPT":
        if (!state.mailSeen) this.violation(state, "RCPT before MAIL");
        if (state.counters === this.stats) {
          this.stats.rcptPerSession[state.index] = (this.stats.rcptPerSession[state.index] ?? 0) + 1;
        }
        break;
    }
  }

  private violation(state: SessionState, text: string): void {
    if (state.violations.has(text)) return;
    state.violations.add(text);
    this.stats.violations.push(text);
  }

  private countError(state: SessionState): void {
    state.errors++;
    if (state.counters === this.stats) {
      this.stats.errorsPerSession[state.index] = (this.stats.errorsPerSession[state.index] ?? 0) + 1;
    }
  }

  /** A 421 is being written now: it reaches the client one latency later. */
  private mark421(state: SessionState): void {
    state.after421At ??= performance.now() + this.latencyMs;
  }

  /**
   * Gives this connection its persona's wording, makes DATA impossible, enforces STARTTLS when
   * required, and applies the error limits: every reply passes through here.
   *
   * Postfix semantics (smtpd.c and smtpd_chat.c, Postfix 2.x-3.x): error_count grows by one for
   * every command whose reply is 4xx/5xx (RCPT rejections, greylisting, 452, bad sequence, unknown
   * command…) and is never reset by RSET, MAIL or a successful RCPT, only by a delivered message
   * (never here: DATA is refused). smtpd_chat_reply() sleeps smtpd_error_sleep_time before EVERY
   * reply once error_count >= smtpd_soft_error_limit. The hard limit is checked at the top of the
   * command loop: the command that brings error_count to smtpd_hard_error_limit still gets its own
   * reply, then, before anything else is read, "421 4.7.0 <myhostname> Error: too many errors"
   * (itself slept) and the session ends.
   */
  private personalize(state: SessionState): void {
    const connection = [...this.smtp.connections].find((c) => c.id === state.id);
    if (!connection) return;
    const send = connection.send.bind(connection);
    const close = connection.close.bind(connection);
    state.closeConnection = () => connection.close();
    const onCommand = connection._onCommand.bind(connection);
    const limits = this.limits;
    connection.send = (code, data, context) => {
      state.repliesOut++;
      if (state.dead) return;
      const [c, d] = this.reword(code, data, context);
      const sleep = limits && state.errors >= limits.soft ? limits.sleepMs : 0;
      if (c >= 400) this.countError(state);
      const hardHit = limits !== undefined && c >= 400 && c !== 421 && state.errors >= limits.hard;
      if (hardHit) state.dead = true;
      this.pace(state, sleep, () => {
        if (c === 421) this.mark421(state);
        send(c, d, false);
      });
      if (hardHit) {
        this.pace(state, limits.sleepMs, () => {
          this.mark421(state);
          send(421, `4.7.0 ${this.name} Error: too many errors`, false);
        });
      }
    };
    // A close (QUIT, 421) waits for the replies still sleeping, so they go out before the FIN.
    connection.close = () => this.pace(state, 0, close);
    // The next command is processed once the previous reply has left; none after the hard limit.
    connection._onCommand = (command, callback) => {
      if (state.dead) {
        callback?.();
        return;
      }
      onCommand(command, () => this.pace(state, 0, () => callback?.()));
    };
    connection.handler_DATA = (_command, callback) => {
      connection.send(554, DATA_REFUSED, false);
      callback();
    };
    if (this.spec.startTls === "require") {
      const guard = (handler: (command: Buffer, callback: () => void) => void) => {
        return (command: Buffer, callback: () => void): void => {
          if (connection.secure) {
            handler(command, callback);
            return;
          }
          connection.send(530, MUST_STARTTLS, false);
          callback();
        };
      };
      connection.handler_MAIL = guard(connection.handler_MAIL.bind(connection));
      connection.handler_RCPT = guard(connection.handler_RCPT.bind(connection));
      connection.handler_DATA = guard(connection.handler_DATA.bind(connection));
    }
  }

  /** Runs fn after sleepMs, after everything queued before it (an order-preserving reply queue). */
  private pace(state: SessionState, sleepMs: number, run: () => void): void {
    if (!state.pacing && state.paceQueue.length === 0 && sleepMs <= 0) {
      run();
      return;
    }
    state.paceQueue.push({ sleepMs, run });
    if (!state.pacing) this.drainPace(state);
  }

  private drainPace(state: SessionState): void {
    const next = state.paceQueue.shift();
    if (!next) {
      state.pacing = false;
      return;
    }
    state.pacing = true;
    this.later(next.sleepMs, () => {
      next.run();
      this.drainPace(state);
    });
  }

  /** Maps smtp-server's stock texts to the persona's, and "\n" in a text to a multi-line reply. */
  private reword(
    code: number,
    data: string | string[] | null | undefined,
    context: string | false | undefined,
  ): [number, string | string[] | null | undefined] {
    const p = this.persona;
    if (code === 220 && data === "Ready to start TLS") return [code, "2.0.0 Ready to start TLS"];
    if (code === 220) return [code, p.greeting(this.name)];
    if (context === "MAIL_FROM_OK") return [code, p.mailOk()];
    if (context === "RCPT_TO_OK") return [code, p.rcptOk()];
    if (code === 221) return [code, p.bye()];
    if (Array.isArray(data)) {
      // The EHLO reply. smtp-server only offers ENHANCEDSTATUSCODES when it adds codes itself;
      // ours are in the texts.
      return [
        code,
        code === 250 && !data.includes("ENHANCEDSTATUSCODES") ? [...data, "ENHANCEDSTATUSCODES"] : data,
      ];
    }
    if (code === 250 && (data === "Flushed" || data === "OK")) return [code, "2.0.0 Ok"];
    if (typeof data === "string" && data.includes("\n")) return [code, data.split("\n")];
    return [code, data];
  }

  private session(id: string): SessionState {
    // Only missing if the socket closed while a hook was pending; a throwaway state is fine.
    return this.sessions.get(id) ?? newState(id, emptyCounters(), 0);
  }

  /** The reply for a RCPT TO, "drop" to close without one, or undefined to accept it. */
  private rcptDecision(address: SMTPServerAddress, session: SMTPServerSession): Reply | "drop" | undefined {
    const state = this.session(session.id);
    state.rcptInTransaction++;
    state.rcptInSession++;
    const perConnection = this.spec.maxRcptPerConnection;
    if (perConnection !== undefined && state.rcptInSession > perConnection) return TOO_MANY_RCPT;
    const max = this.spec.maxRcptPerMessage;
    if (max !== undefined && state.rcptInTransaction > max) return TOO_MANY_RCPT;
    const throttled = this.throttled(state.client);
    if (throttled) return throttled;
    if (this.spec.rcptReply) return this.spec.rcptReply;
    const recipient = address.address.toLowerCase();
    const at = recipient.lastIndexOf("@");
    const domain = this.domains.get(recipient.slice(at + 1));
    if (at < 0 || !domain) return { code: 554, text: `5.7.1 <${recipient}>: Relay access denied` };
    const tenant = domain.spec.name.toLowerCase();
    if (this.spec.tenantAttribution && state.tenant !== undefined && state.tenant !== tenant) {
      this.stats.crossTenantRefusals++;
      return crossTenantReply(this.name);
    }
    const local = recipient.slice(0, at);
    const closing = closeOnRcptFor(domain.spec, local);
    if (closing) return closing.action === "drop" ? "drop" : closeOnRcptReply(closing);
    const block = this.spec.blockExceptPostmaster;
    if (block && !isRoleAddress(local)) return block;
    if (greylistApplies(domain.spec, local)) {
      const sender = senderOf(session);
      const verdict = this.greylist.check(
        `${session.remoteAddress}|${sender}|${recipient}`,
        domain.spec.greylistSeconds ?? 0,
      );
      if (!verdict.admitted) return greylistReply(domain.spec, recipient, verdict.secondsLeft);
      if (verdict.firstPass) {
        this.stats.greylistPassed.push({
          recipient,
          sender,
          firstAttemptAt: verdict.firstAttemptAt,
          passedAt: Date.now(),
        });
      }
    }
    const decision = this.mailboxDecision(domain, local, recipient);
    if (decision === undefined && this.spec.tenantAttribution) state.tenant ??= tenant;
    return decision;
  }

  /** The provider's refusal when the client's quota is used up; otherwise the RCPT is counted in it. */
  private throttled(client: string): Reply | undefined {
    const name = this.spec.throttle;
    if (name === undefined) return undefined;
    const style = this.throttles.refusal(name, client);
    return style === undefined ? undefined : throttleReply(style, client, traceId());
  }

  private mailboxDecision(domain: ServedDomain, local: string, recipient: string): Reply | undefined {
    if (domain.senderBlocked.has(local)) return senderBlockReply(domain.spec, recipient);
    if (domain.busy.has(local)) return receivingTooQuicklyReply(traceId());
    if (domain.full.has(local)) return this.persona.mailboxFull(recipient);
    if (domain.disabled.has(local)) return this.persona.disabled(recipient);
    if (domain.mailboxes.has(local) || domain.spec.catchAll === true) return undefined;
    if (roleExists(domain.spec, this.kind, local)) return undefined;
    return (
      configuredUnknownUser(domain.spec, this.spec, recipient) ??
      this.persona.unknownUser(recipient, this.name)
    );
  }

  /** Runs fn after ms (synchronously when ms <= 0); pending runs are cancelled by close(). */
  private later(ms: number, fn: () => void): void {
    if (ms <= 0) {
      fn();
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }
}

function senderOf(session: SMTPServerSession): string {
  const from = session.envelope.mailFrom;
  return from === false ? "" : from.address.toLowerCase();
}

function closeServer(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

type WriteFn = (...args: unknown[]) => unknown;

/**
 * Delays everything written to the socket (and its end) by latencyMs, preserving order. One timer
 * per socket drives a FIFO whose due times only grow, so replies can never overtake each other.
 */
function delayWrites(socket: net.Socket, latencyMs: number): void {
  if (latencyMs <= 0) return;
  const queue: { due: number; run: () => void }[] = [];
  let timer: NodeJS.Timeout | undefined;
  const pump = (): void => {
    timer = undefined;
    const now = performance.now();
    while (queue[0] && queue[0].due <= now + 1) queue.shift()?.run();
    if (queue[0]) timer = setTimeout(pump, queue[0].due - now);
  };
  const defer = (fn: WriteFn) =>
    ((...args: unknown[]) => {
      queue.push({ due: performance.now() + latencyMs, run: () => socket.destroyed || fn(...args) });
      timer ??= setTimeout(pump, latencyMs);
      return fn === end ? socket : true;
    }) as never;
  const write = socket.write.bind(socket) as WriteFn;
  const end = socket.end.bind(socket) as WriteFn;
  socket.write = defer(write);
  socket.end = defer(end);
  socket.once("close", () => {
    clearTimeout(timer);
    queue.length = 0;
  });
}

/**
 * Starts every host on one common port at its own address. Without `port`, the first host binds
 * port 0 and the others follow; if any address is taken on that port, all retry with a new one.
 */
export async function startSmtpHosts(hosts: readonly SmtpHost[], port?: number): Promise<number> {
  if (port !== undefined) {
    await listenAll(hosts, port);
    return port;
  }
  let lastError: unknown;
  for (let attempt = 0; attempt < 20; attempt++) {
    const [first, ...rest] = hosts;
    if (!first) return freePort();
    try {
      const chosen = await first.listen(0);
      await listenAll(rest, chosen);
      return chosen;
    } catch (error) {
      lastError = error;
      await Promise.all(hosts.map((h) => h.close()));
    }
  }
  throw new Error("mail-world SMTP: no port was free on every host address", { cause: lastError });
}

async function listenAll(hosts: readonly SmtpHost[], port: number): Promise<void> {
  const results = await Promise.allSettled(hosts.map((h) => h.listen(port)));
  const failed = results.find((r) => r.status === "rejected");
  if (failed) {
    await Promise.all(hosts.map((h) => h.close()));
    throw failed.reason;
  }
}

/** A port nothing listens on, for a world without SMTP hosts (its smtpPort must still be a number). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await closeServer(server);
  return port;
}
