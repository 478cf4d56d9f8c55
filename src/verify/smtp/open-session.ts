// The first connection of a session: the hosts in preference order, a slot (or an idle
// connection) at each one's IP, the provider's pace, then the banner; falling back to the next
// host when one cannot be reached or closes before its banner.
import { sleep } from "../../lib/sleep.ts";
import type { EgressIdentity, HostSlot } from "../ports.ts";
import type { MailHost } from "../resolve-domain.ts";
import type { ConnectFailureKind } from "./connect.ts";
import type { SmtpConnection } from "./connection.ts";
import { providerOf } from "./egress.ts";
import { connectAndGreet } from "./greeting.ts";
import type { IdleConnection } from "./idle-connections.ts";
import { freshConnection, resumedConnection, type LiveConnection } from "./live-connection.ts";
import { refuseOrAnswer } from "./provider-pace.ts";
import { connectFailureReason, fail, isAborted } from "./session-errors.ts";
import { acquireSlot, giveBack, paceOf, type PaceHold, type Slot } from "./session-slots.ts";
import {
  MAX_HOSTS_TRIED,
  SERVER_SETTLE_MS,
  type SessionConfig,
  type SessionDeps,
  type SessionReport,
  type SessionRequest,
} from "./session-types.ts";

export type Opened = {
  conn: SmtpConnection;
  release: HostSlot;
  address: string;
  identity: EgressIdentity;
  live: LiveConnection;
};

/** Whom a session may leave from, what it will ask, and its place under the provider's pace. */
export interface OpenPlan {
  identities: readonly EgressIdentity[];
  excluded: ReadonlySet<string>;
  plan: () => readonly string[];
  pace: PaceHold;
}

/** Connect phase: falls back to the next host on connect failure or a close before the banner. */
export async function openSession(
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
    if (slot.kind === "idle")
      return takeOver(slot.idle, address, candidates, config, deps, report, req.signal);
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

/** The session begins on an idle connection another session left at this IP: no banner of its own. */
function takeOver(
  idle: IdleConnection,
  address: string,
  candidates: readonly EgressIdentity[],
  config: SessionConfig,
  deps: SessionDeps,
  report: SessionReport,
  signal: AbortSignal | undefined,
): Opened | null {
  const { conn, state } = idle;
  if (signal?.aborted === true) {
    deps.idle?.put(idle);
    return fail(report, { reason: "timeout_smtp" });
  }
  report.greeted = true;
  report.reused = true;
  report.greeting = state.greeting;
  report.ehlo = state.ehlo;
  report.tls = state.tls;
  report.egress = idle.egress;
  const identity = candidates.find((i) => i.id === idle.egress) ?? candidates[0]!;
  return {
    conn,
    release: idle.release,
    address,
    identity,
    live: resumedConnection(state, config),
  };
}

async function* inOrder(hosts: Iterable<MailHost> | AsyncIterable<MailHost>): AsyncGenerator<MailHost> {
  yield* hosts;
}
