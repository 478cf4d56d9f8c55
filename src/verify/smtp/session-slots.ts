// A session's places: a slot at the server's IP (or an idle connection another session left
// there) and its place under the provider's pace, taken together and given back together.
import type { HostSlot } from "../ports.ts";
import { DEFAULT_EGRESS } from "./egress.ts";
import type { IdleConnection } from "./idle-connections.ts";
import { takePace, type PaceTicket } from "./provider-pace.ts";
import type { SessionDeps } from "./session-types.ts";

export type Slot = { kind: "idle"; idle: IdleConnection } | { kind: "slot"; release: HostSlot };

/** The session's place under its provider's pace, once taken (null: not yet, or no pace port). */
export interface PaceHold {
  ticket: PaceTicket | null;
}

/** The egress identity a slot leaves from. */
const egressOfSlot = (slot: Slot): string =>
  slot.kind === "idle" ? slot.idle.egress : (slot.release.egress ?? DEFAULT_EGRESS);

/**
 * The session's place under its provider's pace, once its slot says which identity asks; the
 * place it already holds when it falls back to another host of the same provider and identity.
 */
export async function paceOf(
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
export function giveBack(slot: Slot, deps: SessionDeps): void {
  if (slot.kind === "idle") deps.idle?.put(slot.idle);
  else slot.release();
}

/**
 * A place at the server's IP for one of the wished identities: an idle connection another
 * session left there, or a host-gate slot for a new one, whichever comes first (a session that
 * parks while we wait hands its connection straight over). The loser is given back.
 */
export async function acquireSlot(
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
