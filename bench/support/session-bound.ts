// The round-trip lower bound of a mail-world's SMTP work under the politeness limits: the reasoning
// of bench/batch.ts's header, for benches that run the service as child processes.
//
// A domain's session (one per domain with a server to talk to) costs, at t per SMTP reply:
//   c × (P + 2t) + (c − 1) × 50 ms + ceil((n + 2) / k) × t
// where P is the simulator's banner pause (smtp-server holds every banner back 100 ms to catch
// early talkers: dist/esm/smtp-connection.js), 2t the connect/banner and EHLO round trips, n the
// domain's addresses (+ postmaster control + catch-all probe), k = min(SMTP_ERROR_BUDGET 9, the
// host's RCPT limit) the RCPTs one pipelined write may hold (no more than may still be
// rejected), c = ceil(rejections / 9) the connections the error budget forces (the probe and the
// invalid addresses are the rejections), 50 ms the engine's settle between two (SERVER_SETTLE_MS).
// A host that refuses every RCPT shows it in its first write: one write. A fixed connect reply
// costs P + t. QUIT, DNS and database time are left out, so the bound is optimistic.
//
// A cluster of S session slots (W × WORKER_CONCURRENCY) with s slots per server IP
// (SMTP_MAX_CONNECTIONS_PER_HOST × identities) can't finish faster than
//   max(Σ sessions / S, max over server IPs of Σ its sessions / s, the longest session),
// a server IP's later sessions charged no setup (P + 2t) beyond its first s connections, since
// they may start on one left idle.
import { createExpectation, type DomainSpec, type WorldSpec } from "../../test/support/mail-world/index.ts";

/** smtp-server's early-talker pause before each banner. */
const BANNER_PAUSE_MS = 100;
const ERROR_BUDGET = 9;
const MAX_RCPT = 50;
const SETTLE_MS = 50;

interface Session {
  /** The server IP's key: a front end's label, else the host's name (one listener each). */
  ip: string;
  ms: number;
  /** The part of `ms` a connection left idle at the same IP saves. */
  setupMs: number;
}

/** The sessions of a world, by server IP: computed once, bounded for any cluster size. */
export interface SessionWork {
  sessions: number;
  longestMs: number;
  byIp: Map<string, Session[]>;
}

export interface Bound {
  ms: number;
  /** Which term sets it. */
  decidedBy: string;
}

/** The server a domain's session talks to, or none (DNS-only, no address, every MX refusing). */
function serverOf(domain: DomainSpec) {
  const mode = domain.dns ?? "mx";
  if (mode !== "mx" && mode !== "a_only") return undefined;
  return (domain.hosts ?? []).find((h) => h.hasAddress !== false && !h.refuseConnections);
}

function sessionOf(
  domain: DomainSpec,
  list: readonly string[],
  latencyMs: number,
  rejected: (address: string) => boolean,
): Session | null {
  const host = serverOf(domain);
  if (!host || list.length === 0) return null;
  const ip = host.frontEnd ?? host.name;
  const t = host.latencyMs ?? latencyMs;
  if (host.connectReply) return { ip, ms: BANNER_PAUSE_MS + t, setupMs: 0 };
  const setupMs = BANNER_PAUSE_MS + 2 * t;
  const c = Math.max(1, Math.ceil((1 + list.filter(rejected).length) / ERROR_BUDGET));
  const k = Math.min(ERROR_BUDGET, host.maxRcptPerMessage ?? MAX_RCPT);
  const writes = host.rcptReply ? 1 : Math.ceil((list.length + 2) / k);
  return { ip, ms: c * setupMs + (c - 1) * SETTLE_MS + writes * t, setupMs };
}

export function sessionWork(spec: WorldSpec, addresses: readonly string[]): SessionWork {
  const expect = createExpectation(spec);
  const rejected = (a: string): boolean => expect(a).status === "invalid";
  const perDomain = new Map<string, string[]>();
  for (const a of addresses) {
    const d = a.slice(a.lastIndexOf("@") + 1).toLowerCase();
    const list = perDomain.get(d);
    if (list) list.push(a);
    else perDomain.set(d, [a]);
  }
  const work: SessionWork = { sessions: 0, longestMs: 0, byIp: new Map() };
  for (const domain of spec.domains) {
    const list = perDomain.get(domain.name.toLowerCase()) ?? [];
    const s = sessionOf(domain, list, spec.latencyMs ?? 0, rejected);
    if (!s) continue;
    work.sessions++;
    work.longestMs = Math.max(work.longestMs, s.ms);
    const atIp = work.byIp.get(s.ip);
    if (atIp) atIp.push(s);
    else work.byIp.set(s.ip, [s]);
  }
  return work;
}

/** An IP's sessions back to back over its `slots` connections, setup paid once per connection. */
function ipMs(sessions: readonly Session[], slots: number): number {
  const setups = sessions.map((s) => s.setupMs).sort((a, b) => b - a);
  const paid = setups.slice(0, slots).reduce((sum, ms) => sum + ms, 0);
  return sessions.reduce((sum, s) => sum + s.ms - s.setupMs, 0) + paid;
}

export function roundTripBound(
  work: SessionWork,
  limits: { slotsPerIp: number; sessionSlots: number },
): Bound {
  let all = 0;
  let busiest = { ip: "", ms: 0 };
  for (const [ip, sessions] of work.byIp) {
    const ms = ipMs(sessions, limits.slotsPerIp);
    all += ms;
    if (ms / limits.slotsPerIp > busiest.ms) busiest = { ip, ms: ms / limits.slotsPerIp };
  }
  const terms: Bound[] = [
    { ms: all / limits.sessionSlots, decidedBy: `all sessions / ${limits.sessionSlots.toString()}` },
    { ms: busiest.ms, decidedBy: `server IP ${busiest.ip}` },
    { ms: work.longestMs, decidedBy: "the longest session" },
  ];
  return terms.reduce((a, b) => (b.ms > a.ms ? b : a));
}
