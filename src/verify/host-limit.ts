// At most N concurrent holders per key, the rest waiting in arrival order: the per-mail-host
// session limit of one process. Pure in-memory; the cluster-wide limit is a HostGate port.
import { AbortedError } from "./abort.ts";
import type { HostGate } from "./ports.ts";

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

/** A HostGate that only limits this process: at most `max` sessions per host, others wait. */
export function createLocalHostGate(max: number): HostGate {
  const semaphore = new KeyedSemaphore(Math.max(1, max));
  return { acquire: (host, signal) => semaphore.acquire(host, signal) };
}
