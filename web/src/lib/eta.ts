// Time left for a running task, from how fast its finished-job count grew over the last minute
// of polling (the server keeps no rate; one minute smooths per-domain bursts).

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
