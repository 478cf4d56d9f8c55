// The simulated DNS server: answers MX/A/PTR for the world over UDP and TCP on 127.0.0.1.
// It plays the role of the recursive resolver the engine is pointed at (DNS_SERVERS), so every
// name of the world is answered from one in-memory zone, with the failure modes of DnsMode.

import type net from "node:net";
import { Packet, createTCPServer, createUDPServer } from "dns2";
import type { DnsHandler, Question, Resource, TCPServer, UDPServer } from "dns2";

import { bindPortPair } from "../port-pair.ts";
import type { DomainSpec, WorldSpec } from "./types.ts";

const TTL_SECONDS = 300;
const LOOPBACK = "127.0.0.1";
/** RFC 1035 §4.1.1 response codes (dns2 has them at runtime but not in its typings). */
const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3 } as const;

interface MxRecord {
  exchange: string;
  priority: number;
}

/** What the server knows about one owner name. A name absent from the zone is NXDOMAIN. */
export interface ZoneEntry {
  /** servfail and timeout apply to every query type for the name. */
  mode: "answer" | "servfail" | "timeout";
  a?: string;
  mx?: MxRecord[];
  ptr?: string;
}

export type Zone = ReadonlyMap<string, ZoneEntry>;

export interface DnsServerHandle {
  readonly host: string;
  readonly port: number;
  /** Queries received (UDP and TCP, answered or not) of one type ("A", "AAAA", "MX", …), by name. */
  queries(type: string): Map<string, number>;
  resetQueries(): void;
  close(): Promise<void>;
}

/** Query counts by type name and then by normalized owner name. */
type QueryLog = Map<string, Map<string, number>>;

const TYPE_NAMES = new Map<number, string>(
  Object.entries(Packet.TYPE as Record<string, number>).map(([name, code]) => [code, name]),
);

function countQuery(log: QueryLog, question: Question): void {
  const type = TYPE_NAMES.get(question.type) ?? String(question.type);
  const byName = log.get(type) ?? new Map<string, number>();
  const name = normalizeName(question.name);
  byName.set(name, (byName.get(name) ?? 0) + 1);
  log.set(type, byName);
}

/** Lowercase, without the trailing root dot: the key of every zone lookup. */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

/** "127.0.1.5" -> "5.1.0.127.in-addr.arpa" */
export function reverseName(ipv4: string): string {
  return `${ipv4.split(".").reverse().join(".")}.in-addr.arpa`;
}

/**
 * Builds the zone of a world. `addresses`: the loopback address of every host name that has one
 * (the names of a front end share one); `ptrs`: the name each address's PTR record gives, for the
 * addresses that have one.
 */
export function buildZone(
  spec: WorldSpec,
  addresses: ReadonlyMap<string, string>,
  ptrs: ReadonlyMap<string, string>,
): Map<string, ZoneEntry> {
  const zone = new Map<string, ZoneEntry>();
  for (const [name, address] of addresses) zone.set(name, { mode: "answer", a: address });
  for (const [address, name] of ptrs) zone.set(reverseName(address), { mode: "answer", ptr: name });
  // Domains come second so that a domain's DnsMode wins over a host entry of the same name.
  for (const domain of spec.domains) addDomain(zone, domain, addresses);
  return zone;
}

function addDomain(
  zone: Map<string, ZoneEntry>,
  domain: DomainSpec,
  addresses: ReadonlyMap<string, string>,
): void {
  const name = normalizeName(domain.name);
  const existing = zone.get(name);
  const mode = domain.dns ?? "mx";
  switch (mode) {
    case "nxdomain":
      zone.delete(name);
      return;
    case "servfail":
    case "timeout":
      zone.set(name, { mode });
      return;
    case "no_records":
      zone.set(name, { mode: "answer" });
      return;
    case "null_mx":
      zone.set(name, { mode: "answer", mx: [{ exchange: "", priority: 0 }] });
      return;
    case "a_only": {
      const first = domain.hosts?.[0];
      const a = first ? addresses.get(normalizeName(first.name)) : undefined;
      zone.set(name, a === undefined ? { mode: "answer" } : { mode: "answer", a });
      return;
    }
    case "mx": {
      const mx = (domain.hosts ?? [])
        .map((h) => ({ exchange: normalizeName(h.name), priority: h.preference ?? 10 }))
        .sort((x, y) => x.priority - y.priority);
      zone.set(name, { ...existing, mode: "answer", mx });
      return;
    }
  }
}

type Answer = { rcode: number; records: Resource[] } | "drop";

/** The answer for one question, or "drop" when the name simulates an unresponsive server. */
export function answerQuestion(zone: Zone, question: Question): Answer {
  const entry = zone.get(normalizeName(question.name));
  if (!entry) return { rcode: RCODE.NXDOMAIN, records: [] };
  if (entry.mode === "timeout") return "drop";
  if (entry.mode === "servfail") return { rcode: RCODE.SERVFAIL, records: [] };
  return { rcode: RCODE.NOERROR, records: recordsFor(entry, question) };
}

function recordsFor(entry: ZoneEntry, question: Question): Resource[] {
  const base = { name: question.name, class: Packet.CLASS.IN, ttl: TTL_SECONDS };
  const records: Resource[] = [];
  const wants = (type: number): boolean => question.type === type || question.type === Packet.TYPE.ANY;
  if (wants(Packet.TYPE.A) && entry.a !== undefined) {
    records.push(new Packet.Resource({ ...base, type: Packet.TYPE.A, address: entry.a }));
  }
  if (wants(Packet.TYPE.MX)) {
    for (const mx of entry.mx ?? []) {
      records.push(new Packet.Resource({ ...base, type: Packet.TYPE.MX, ...mx }));
    }
  }
  if (wants(Packet.TYPE.PTR) && entry.ptr !== undefined) {
    records.push(new Packet.Resource({ ...base, type: Packet.TYPE.PTR, domain: entry.ptr }));
  }
  return records;
}

function makeHandler(zone: Zone, log: QueryLog): DnsHandler {
  return (request, send) => {
    const response = Packet.createResponseFromRequest(request);
    response.header.ra = 1;
    const question = request.questions[0];
    if (question) countQuery(log, question);
    if (!question) {
      response.header.rcode = RCODE.FORMERR;
      void send(response).catch(() => undefined);
      return;
    }
    const answer = answerQuestion(zone, question);
    if (answer === "drop") return;
    response.header.rcode = answer.rcode;
    response.header.aa = 1;
    response.answers = answer.records;
    // send() rejects when the client is already gone (closed TCP socket): nothing left to answer.
    void send(response).catch(() => undefined);
  };
}

/**
 * Starts the server on `host` (default 127.0.0.1). Without `port`, UDP binds port 0 and TCP then takes
 * the same number; on a clash both are retried, so UDP and TCP always share one port.
 */
export async function startDnsServer(
  zone: Zone,
  opts: { port?: number; host?: string } = {},
): Promise<DnsServerHandle> {
  const host = opts.host ?? LOOPBACK;
  const { port } = opts;
  return port === undefined
    ? bindPortPair(`mail-world DNS on ${host}`, () => bindPair(zone, host, 0))
    : bindPair(zone, host, port);
}

async function bindPair(zone: Zone, host: string, port: number): Promise<DnsServerHandle> {
  const log: QueryLog = new Map();
  const handler = makeHandler(zone, log);
  const udp = createUDPServer(handler);
  udp.on("requestError", () => undefined);
  try {
    await listenOrFail(udp, () => udp.listen(port, host));
  } catch (error) {
    udp.close();
    throw error;
  }
  const boundPort = udp.address().port;
  const tcp = createTCPServer(handler);
  tcp.on("requestError", () => undefined);
  const sockets = trackSockets(tcp);
  try {
    await listenOrFail(tcp, () => {
      tcp.listen(boundPort, host);
    });
  } catch (error) {
    await closeUdp(udp);
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    host,
    port: boundPort,
    queries: (type) => new Map(log.get(type.toUpperCase())),
    resetQueries: () => log.clear(),
    close: () => (closing ??= closeBoth(udp, tcp, sockets)),
  };
}

function listenOrFail(server: UDPServer | TCPServer, listen: () => unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once("error", onError);
    server.once("listening", () => {
      server.off("error", onError);
      // Later socket-level errors (client resets) must not crash the process.
      server.on("error", () => undefined);
      resolve();
    });
    listen();
  });
}

function trackSockets(tcp: TCPServer): Set<net.Socket> {
  const sockets = new Set<net.Socket>();
  tcp.on("connection", (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.once("close", () => sockets.delete(socket));
  });
  return sockets;
}

function closeUdp(udp: UDPServer): Promise<void> {
  return new Promise((resolve) => udp.close(() => resolve()));
}

async function closeBoth(udp: UDPServer, tcp: TCPServer, sockets: Set<net.Socket>): Promise<void> {
  // Unanswered ("timeout") TCP queries keep their connection open until dns2's 10 s idle timer.
  for (const socket of sockets) socket.destroy();
  await Promise.all([closeUdp(udp), new Promise<void>((resolve) => tcp.close(() => resolve()))]);
}
