// One simulated MX host: a `smtp-server` SMTPServer behind our own net.Server on the host's
// loopback address. Owning the listener lets us count and shape every connection before
// smtp-server sees it (fixed connect replies, drops, rate limits) and delay every reply.
//
// Latency model: every byte the host writes leaves `latencyMs` after smtp-server produced it,
// in order (a delay queue in front of socket.write/end). That is a network round trip: a client
// that pipelines N commands gets N replies after one latency, a lock-step client pays N latencies.
// smtp-server itself adds a fixed 100 ms before the banner (its early-talker check); bannerDelayMs
// and latencyMs come on top of that.
//
// Command counting: every LF-terminated line the client sends counts as a command (EHLO, MAIL,
// RCPT, RSET, NOOP, QUIT, DATA, junk…). DATA is always refused, so no message body is ever
// read and every line received is a command line.

import net from "node:net";
import { performance } from "node:perf_hooks";
import { SMTPServer } from "smtp-server";
import type { SMTPServerAddress, SMTPServerSession } from "smtp-server";

import type { DomainSpec, FixedReply, HostCounters, HostSpec, ServerKind } from "./types.ts";

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
};

const DATA_REFUSED = "5.7.1 Message refused: this is a simulated mail host, it never accepts DATA";
const GREYLISTED: Reply = { code: 451, text: "4.7.1 Greylisted, please try again later" };
const TOO_MANY_RCPT: Reply = { code: 452, text: "4.5.3 Too many recipients" };

// ---------------------------------------------------------------------------------------------

/** First-seen times of (client, sender, recipient) triplets, shared by every host of a world. */
export class Greylist {
  private readonly firstSeen = new Map<string, number>();

  /** true once `seconds` have passed since the triplet's first attempt (which itself is refused). */
  admits(key: string, seconds: number): boolean {
    const now = Date.now();
    const first = this.firstSeen.get(key);
    if (first === undefined) {
      this.firstSeen.set(key, now);
      return false;
    }
    return now - first >= seconds * 1000;
  }
}

/** A domain as the host sees it: lowercase local-part sets for constant-time RCPT decisions. */
interface ServedDomain {
  spec: DomainSpec;
  mailboxes: Set<string>;
  full: Set<string>;
  disabled: Set<string>;
}

export interface SmtpHostConfig {
  /** Normalized (lowercase) host name; also the smtp-server `name`. */
  name: string;
  spec: HostSpec;
  address: string;
  latencyMs: number;
  /** Domains routed to this host (MX target or A-only address), by lowercase name. */
  domains: readonly DomainSpec[];
  greylist: Greylist;
}

interface SessionState {
  /** The counters object current when the session opened; rcpt counts go to it only. */
  counters: HostCounters;
  index: number;
  rcptInTransaction: number;
}

function emptyCounters(open = 0): HostCounters {
  return { connections: 0, concurrent: open, maxConcurrent: open, commands: 0, rcptPerSession: [] };
}

const lowerSet = (list: readonly string[] | undefined): Set<string> =>
  new Set((list ?? []).map((s) => s.toLowerCase()));

function serve(spec: DomainSpec): ServedDomain {
  return {
    spec,
    mailboxes: lowerSet(spec.mailboxes),
    full: lowerSet(spec.fullMailboxes),
    disabled: lowerSet(spec.disabledMailboxes),
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

export class SmtpHost {
  readonly name: string;
  readonly address: string;
  private readonly spec: HostSpec;
  private readonly persona: Persona;
  private readonly latencyMs: number;
  private readonly domains: Map<string, ServedDomain>;
  private readonly greylist: Greylist;
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
    this.persona = PERSONAS[config.spec.kind ?? "postfix"];
    this.latencyMs = config.latencyMs;
    this.greylist = config.greylist;
    this.domains = new Map(config.domains.map((d) => [d.name.toLowerCase(), serve(d)]));
    this.smtp = this.createSmtpServer();
  }

  get refusesConnections(): boolean {
    return this.spec.refuseConnections === true;
  }

  counters(): HostCounters {
    return { ...this.stats, rcptPerSession: [...this.stats.rcptPerSession] };
  }

  resetCounters(): void {
    this.stats = emptyCounters(this.sockets.size);
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
    const smtp = new SMTPServer({
      name: this.name,
      logger: false,
      disabledCommands: ["AUTH", "STARTTLS", "XCLIENT", "XFORWARD", "WIZ", "SHELL", "KILL"],
      hideSTARTTLS: true,
      // No real DNS lookups from a simulated host: the machine may have no resolver at all.
      disableReverseLookup: true,
      heloResponse: this.persona.heloResponse,
      ...(this.persona.size === undefined ? {} : { size: this.persona.size }),
      onConnect: (_session, callback) => this.later(this.spec.bannerDelayMs ?? 0, () => callback()),
      onMailFrom: (_address, session, callback) => {
        this.session(session.id).rcptInTransaction = 0;
        callback();
      },
      onRcptTo: (address, session, callback) => {
        const reply = this.rcptDecision(address, session);
        callback(reply ? new ReplyError(reply.code, reply.text) : null);
      },
    });
    // Client resets mid-transaction surface here; they are the client's business, not ours.
    smtp.on("error", () => undefined);
    return smtp;
  }

  private accept(socket: net.Socket): void {
    socket.on("error", () => undefined);
    const id = `${this.name}#${(++this.sessionSeq).toString()}`;
    this.track(socket, id);
    delayWrites(socket, this.latencyMs);
    const fixed = this.fixedGreeting();
    if (fixed) {
      this.countCommands(socket, id);
      this.later(this.spec.bannerDelayMs ?? 0, () => socket.end(`${fixed}\r\n`));
      return;
    }
    this.smtp.connect(socket, { id });
    this.personalize(id);
    // After connect(): smtp-server has piped the socket, so this listener misses nothing.
    this.countCommands(socket, id);
  }

  private track(socket: net.Socket, id: string): void {
    const stats = this.stats;
    this.connectionsSinceStart++;
    stats.connections++;
    stats.concurrent++;
    stats.maxConcurrent = Math.max(stats.maxConcurrent, stats.concurrent);
    const index = stats.rcptPerSession.push(0) - 1;
    this.sessions.set(id, { counters: stats, index, rcptInTransaction: 0 });
    this.sockets.add(socket);
    socket.once("close", () => {
      this.sockets.delete(socket);
      this.sessions.delete(id);
      this.stats.concurrent = Math.max(0, this.stats.concurrent - 1);
    });
  }

  /** The line that replaces the SMTP session, if this connection gets one. */
  private fixedGreeting(): string | undefined {
    const limit = this.spec.rateLimitAfterConnections;
    if (limit !== undefined && this.connectionsSinceStart > limit) {
      return `421 4.7.0 ${this.name} Too many connections from your IP, try again later`;
    }
    if (this.spec.connectReply) return fixedLine(this.spec.connectReply);
    if (this.spec.dropAfterBanner) return `220 ${this.persona.greeting(this.name)}`;
    return undefined;
  }

  private countCommands(socket: net.Socket, id: string): void {
    let partial = "";
    socket.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString("latin1")).split("\n");
      // A verb is all we need from an unterminated line; don't let a junk stream grow it.
      partial = (lines.pop() ?? "").slice(0, 64);
      for (const line of lines) this.onCommandLine(line, id);
    });
  }

  private onCommandLine(line: string, id: string): void {
    this.stats.commands++;
    if (!/^\s*RCPT\b/i.test(line)) return;
    const session = this.sessions.get(id);
    if (session && session.counters === this.stats) {
      this.stats.rcptPerSession[session.index] = (this.stats.rcptPerSession[session.index] ?? 0) + 1;
    }
  }

  /** Gives this connection its persona's wording and makes DATA impossible. */
  private personalize(id: string): void {
    const connection = [...this.smtp.connections].find((c) => c.id === id);
    if (!connection) return;
    const send = connection.send.bind(connection);
    connection.send = (code, data, context) => {
      const [c, d] = this.reword(code, data, context);
      send(c, d, false);
    };
    connection.handler_DATA = (_command, callback) => {
      send(554, DATA_REFUSED, false);
      callback();
    };
  }

  /** Maps smtp-server's stock texts to the persona's, and "\n" in a text to a multi-line reply. */
  private reword(
    code: number,
    data: string | string[] | null | undefined,
    context: string | false | undefined,
  ): [number, string | string[] | null | undefined] {
    const p = this.persona;
    if (code === 220) return [code, p.greeting(this.name)];
    if (context === "MAIL_FROM_OK") return [code, p.mailOk()];
    if (context === "RCPT_TO_OK") return [code, p.rcptOk()];
    if (code === 221) return [code, p.bye()];
    if (Array.isArray(data)) {
      // smtp-server only offers ENHANCEDSTATUSCODES when it adds codes itself; ours are in the texts.
      return [code, data.includes("PIPELINING") ? [...data, "ENHANCEDSTATUSCODES"] : data];
    }
    if (code === 250 && (data === "Flushed" || data === "OK")) return [code, "2.0.0 Ok"];
    if (typeof data === "string" && data.includes("\n")) return [code, data.split("\n")];
    return [code, data];
  }

  private session(id: string): SessionState {
    let state = this.sessions.get(id);
    if (!state) {
      // Only reachable if the socket closed while a hook was pending; a throwaway state is fine.
      state = { counters: emptyCounters(), index: 0, rcptInTransaction: 0 };
    }
    return state;
  }

  /** The reply for a RCPT TO, or undefined to accept it. */
  private rcptDecision(address: SMTPServerAddress, session: SMTPServerSession): Reply | undefined {
    const state = this.session(session.id);
    state.rcptInTransaction++;
    const max = this.spec.maxRcptPerMessage;
    if (max !== undefined && state.rcptInTransaction > max) return TOO_MANY_RCPT;
    if (this.spec.rcptReply) return this.spec.rcptReply;
    const recipient = address.address.toLowerCase();
    const at = recipient.lastIndexOf("@");
    const domain = this.domains.get(recipient.slice(at + 1));
    if (at < 0 || !domain) return { code: 554, text: `5.7.1 <${recipient}>: Relay access denied` };
    const seconds = domain.spec.greylistSeconds ?? 0;
    if (seconds > 0 && !this.greylist.admits(greylistKey(session, recipient), seconds)) return GREYLISTED;
    return this.mailboxDecision(domain, recipient.slice(0, at), recipient);
  }

  private mailboxDecision(domain: ServedDomain, local: string, recipient: string): Reply | undefined {
    if (domain.full.has(local)) return this.persona.mailboxFull(recipient);
    if (domain.disabled.has(local)) return this.persona.disabled(recipient);
    if (domain.mailboxes.has(local) || domain.spec.catchAll === true) return undefined;
    return this.persona.unknownUser(recipient, this.name);
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

function greylistKey(session: SMTPServerSession, recipient: string): string {
  const from = session.envelope.mailFrom;
  const sender = from === false ? "" : from.address.toLowerCase();
  return `${session.remoteAddress}|${sender}|${recipient}`;
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
