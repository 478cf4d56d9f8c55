// Time left for a running task, from how fast its finished-job count grew over the last minute
// of polling (the server keeps no rate; one minute smooths per-domain bursts). Addresses waiting
// for a server's retry are left out of that rate: they are due at a known time instead.
import { formatNumber } from "./format.ts";

export interface Sample {
  at: number;
  done: number;
}

const WINDOW_MS = 60_000;

/** The samples to keep after adding `next` (those within the window, plus one before it). */
export function addSample(samples: readonly Sample[], next: Sample): Sample[] {
  // A lower count than before means the task was replaced or recounted: start again.
  const valid = samples.filter((s) => s.done <= next.done);
  const inWindow = valid.findIndex((s) => next.at - s.at <= WINDOW_MS);
  const from = inWindow < 0 ? valid.length - 1 : Math.max(0, inWindow - 1);
  return [...valid.slice(Math.max(0, from)), next];
}

/** Milliseconds left, or null when there is no progress to extrapolate from yet. */
export function etaMs(samples: readonly Sample[], total: number): number | null {
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (!first || !last || last.at - first.at < 3000) return null;
  const rate = (last.done - first.done) / (last.at - first.at);
  if (rate <= 0) return null;
  return Math.max(0, total - last.done) / rate;
}

/** A task's metrics.retries as the API reports them. */
export interface RetriesWaiting {
  pending: number;
  next_attempt_at: string | null;
  last_attempt_at?: string | null;
  settles_at?: string | null;
}

/**
 * When the addresses waiting for a server's retry are settled at the latest: the end of the
 * task's retries (its retry window, or a finish), else (a task from before retry windows) its
 * latest retry scheduled now. Null when none is waiting.
 */
export function retriesSettleBy(r: RetriesWaiting): string | null {
  if (r.pending === 0) return null;
  return r.settles_at ?? r.last_attempt_at ?? r.next_attempt_at;
}

/**
 * Milliseconds left for the addresses that are not waiting for a retry (those keep their own
 * time, retriesSettleBy): the rate would otherwise promise "less than a minute" for a task whose
 * last addresses wait half an hour for a greylisting server.
 */
export const etaWithoutRetriesMs = (
  samples: readonly Sample[],
  total: number,
  retrying: number,
): number | null => etaMs(samples, Math.max(0, total - retrying));

const timeFormat = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });
const dayTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** "10:25" for a moment later today, with the date for another day. */
export function formatUntil(iso: string, now: Date = new Date()): string {
  const at = new Date(iso);
  return at.toDateString() === now.toDateString() ? timeFormat.format(at) : dayTimeFormat.format(at);
}

/** "1,536 done; 98 wait for retries until 10:25." */
export function retriesLine(
  done: number,
  waiting: number,
  until: string,
  next: string | null = null,
): string {
  const wait = waiting === 1 ? "1 waits for a retry" : `${formatNumber(waiting)} wait for retries`;
  // The next attempt is what the user watches for; the window's end is when it is settled at the latest.
  const nextTry = next !== null && next !== until ? `, next try ${next}` : "";
  return `${formatNumber(done)} done; ${wait}${nextTry}, settled by ${until}.`;
}

/** A provider pacing the task, as metrics.paced reports it. */
export interface PacedProvider {
  name: string;
  pending: number;
  rate_per_minute: number | null;
  expected_done_at: string | null;
}

/** "Gmail: 412 addresses at the pace it allows, about 6 min." */
export function pacedLine(p: PacedProvider, now: number = Date.now()): string {
  const addresses = p.pending === 1 ? "1 address" : `${formatNumber(p.pending)} addresses`;
  if (p.expected_done_at === null) return `${p.name}: ${addresses} wait while we learn the pace it allows.`;
  const left = Date.parse(p.expected_done_at) - now;
  const when = left < 60_000 ? "less than a minute" : `about ${Math.ceil(left / 60_000).toString()} min`;
  return `${p.name}: ${addresses} at the pace it allows, ${when}.`;
}

/**
 * Milliseconds left once the paced providers are counted: the rest goes at the observed rate
 * (`restMs`, computed without the paced addresses), each paced provider at its own pace, in
 * parallel; the later of them. Null when neither is known.
 */
export function etaWithPacesMs(
  restMs: number | null,
  paced: readonly PacedProvider[],
  now: number = Date.now(),
): number | null {
  const paces = paced.flatMap((p) =>
    p.expected_done_at === null ? [] : [Math.max(0, Date.parse(p.expected_done_at) - now)],
  );
  if (paces.length === 0) return restMs;
  return Math.max(restMs ?? 0, ...paces);
}
