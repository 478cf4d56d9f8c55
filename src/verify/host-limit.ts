// At most N concurrent holders per key, the rest waiting in arrival order: the per-mail-host
// session limit of one process. Pure in-memory; the cluster-wide limit is a HostGate port.
import { AbortedError } from "./abort.ts";
import type { HostGate, HostSlot } from "./ports.ts";

interface Waiter {
  grant: () => void;
  signal: AbortSignal | undefined;
}

export class KeyedSemaphore {
  private readonly held = new Map<string, number>();
  private readonly waiting = new Map<string, Waiter[]>();

  constructor(private readonly max: number) {}

  /** Holders of `key` right now. */
  holders(key: string): number {
    return this.held.get(key) ?? 0;
  }

  /** Resolves with a release function (idempotent) once a place is free; rejects with AbortedError on abort. */
  acquire(key: string, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted === true) return Promise.reject(new AbortedError());
    if (this.holders(key) < this.max) return Promise.resolve(this.take(key));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        signal,
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.take(key));
        },
      };
      const onAbort = (): void => {
        const queue = this.waiting.get(key) ?? [];
        const i = queue.indexOf(waiter);
        if (i >= 0) queue.splice(i, 1);
        if (queue.length === 0) this.waiting.delete(key);
        reject(new AbortedError());
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const queue = this.waiting.get(key) ?? [];
      queue.push(waiter);
      this.waiting.set(key, queue);
    });
  }

  private take(key: string): () => void {
    this.held.set(key, this.holders(key) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = this.holders(key) - 1;
      if (n <= 0) this.held.delete(key);
      else this.held.set(key, n);
      const queue = this.waiting.get(key);
      const next = queue?.shift();
      if (queue !== undefined && queue.length === 0) this.waiting.delete(key);
      next?.grant();
    };
  }
}

// How long an identity refused by a provider rests, in a process without the slot table.
const LOCAL_REST_MS = 15 * 60_000;

/**
 * A HostGate that only limits this process: at most `max` sessions per host and egress identity,
 * others wait. Identities refused by a provider rest for it in memory; when all rest, they are
 * used anyway (nothing here can defer work for later).
 */
export function createLocalHostGate(max: number, egress: readonly string[] = [""]): HostGate {
  const semaphore = new KeyedSemaphore(Math.max(1, max));
  const restUntil = new Map<string, number>();
  const restKey = (e: string, provider: string): string => `${e}\n${provider}`;
  const slotKey = (e: string, host: string): string => `${e}\n${host}`;
  let turn = 0;
  return {
    async acquire(host, signal, wish): Promise<HostSlot> {
      if (wish === undefined || wish.egress.length === 0) return semaphore.acquire(host, signal);
      const now = Date.now();
      const awake = wish.egress.filter((e) => (restUntil.get(restKey(e, wish.provider)) ?? 0) <= now);
      const names = awake.length > 0 ? awake : wish.egress;
      const start = turn++ % names.length;
      const [chosen] = [...names.slice(start), ...names.slice(0, start)].sort(
        (a, b) => semaphore.holders(slotKey(a, host)) - semaphore.holders(slotKey(b, host)),
      );
      // A single default identity keeps the key it always had.
      const key = egress.length === 1 && chosen === egress[0] ? host : slotKey(chosen!, host);
      return Object.assign(await semaphore.acquire(key, signal), { egress: chosen! });
    },
    rest(e, _host, provider) {
      restUntil.set(restKey(e, provider), Date.now() + LOCAL_REST_MS);
      return Promise.resolve();
    },
  };
}
