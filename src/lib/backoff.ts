// How a polling loop (job claims, webhook rounds) waits out an outage of what it polls.

/**
 * Pause of a polling loop (claims, webhook rounds) after `failures` consecutive failed rounds, e.g.
 * while the database restarts: doubling from `baseMs`, capped at 10 s so the loop notices the
 * database is back within seconds, with ±25 % jitter so a fleet of workers doesn't reconnect in
 * lockstep.
 */
export function outageBackoffMs(failures: number, baseMs: number, rand: () => number = Math.random): number {
  const ceiling = Math.min(10_000, Math.max(1, baseMs) * 2 ** Math.max(0, failures - 1));
  return Math.round(ceiling * (0.75 + rand() / 2));
}
