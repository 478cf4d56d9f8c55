// Provider-wide RCPT quotas per client IP (WorldSpec.throttles). One RcptThrottles per world is
// shared by every host, as the Greylist is: a quota spans all the servers of a provider (each on
// its own IP) and outlives the sessions and tasks that draw on it, as a real provider's does.

import { performance } from "node:perf_hooks";

import type { ThrottleClientCounters, ThrottleCounters, ThrottleReply, ThrottleSpec } from "./types.ts";

interface Quota {
  spec: ThrottleSpec;
  /** Per client IP: when each RCPT of its window got through (performance.now()), oldest first. */
  windows: Map<string, number[]>;
  stats: ThrottleCounters;
}

function emptyCounters(): ThrottleCounters {
  return { accepted: 0, refusals: 0, maxInWindow: 0, byClient: {} };
}

function clientCounters(stats: ThrottleCounters, client: string): ThrottleClientCounters {
  const existing = stats.byClient[client];
  if (existing !== undefined) return existing;
  const fresh: ThrottleClientCounters = { accepted: 0, refusals: 0, maxInWindow: 0 };
  stats.byClient[client] = fresh;
  return fresh;
}

function noteWindow(stats: ThrottleCounters, client: ThrottleClientCounters, size: number): void {
  client.maxInWindow = Math.max(client.maxInWindow, size);
  stats.maxInWindow = Math.max(stats.maxInWindow, size);
}

export class RcptThrottles {
  private readonly quotas = new Map<string, Quota>();

  constructor(specs: readonly ThrottleSpec[] = []) {
    for (const spec of specs) {
      if (this.quotas.has(spec.name)) throw new Error(`mail-world: throttle "${spec.name}" declared twice`);
      if (!(spec.maxRcpts >= 0 && spec.windowMs > 0)) {
        throw new Error(`mail-world: throttle "${spec.name}" needs maxRcpts >= 0 and windowMs > 0`);
      }
      this.quotas.set(spec.name, { spec, windows: new Map(), stats: emptyCounters() });
    }
  }

  /** Throws for a name no ThrottleSpec declares: a misspelt one would silently throttle nothing. */
  assertDeclared(name: string, hostName: string): void {
    this.quota(name, `host "${hostName}": `);
  }

  /**
   * Counts one RCPT of `client` against the named quota. undefined: it got through and now sits
   * in the client's window; otherwise the quota was full, the refusal is counted and the RCPT is
   * left out of the window, and the provider's reply style is returned.
   */
  refusal(name: string, client: string): ThrottleReply | undefined {
    const quota = this.quota(name);
    const now = performance.now();
    const window = this.slide(quota, client, now);
    const mine = clientCounters(quota.stats, client);
    if (window.length >= quota.spec.maxRcpts) {
      quota.stats.refusals++;
      mine.refusals++;
      return quota.spec.reply;
    }
    window.push(now);
    quota.stats.accepted++;
    mine.accepted++;
    noteWindow(quota.stats, mine, window.length);
    return undefined;
  }

  counters(name: string): ThrottleCounters {
    const { stats } = this.quota(name);
    return {
      ...stats,
      byClient: Object.fromEntries(Object.entries(stats.byClient).map(([ip, c]) => [ip, { ...c }])),
    };
  }

  /** Zeroes the counts; the windows stay, so each high-water mark restarts at what is in them now. */
  resetCounters(): void {
    const now = performance.now();
    for (const quota of this.quotas.values()) {
      quota.stats = emptyCounters();
      for (const client of quota.windows.keys()) {
        const size = this.slide(quota, client, now).length;
        if (size > 0) noteWindow(quota.stats, clientCounters(quota.stats, client), size);
      }
    }
  }

  /** The client's window with the RCPTs older than windowMs dropped. */
  private slide(quota: Quota, client: string, now: number): number[] {
    let window = quota.windows.get(client);
    if (!window) {
      window = [];
      quota.windows.set(client, window);
    }
    const oldest = now - quota.spec.windowMs;
    let expired = 0;
    while (expired < window.length && (window[expired] ?? Infinity) <= oldest) expired++;
    if (expired > 0) window.splice(0, expired);
    return window;
  }

  private quota(name: string, context = ""): Quota {
    const quota = this.quotas.get(name);
    if (!quota) throw new Error(`mail-world: ${context}no throttle "${name}" in WorldSpec.throttles`);
    return quota;
  }
}
