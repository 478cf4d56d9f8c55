// A progress indicator for long CLI commands, on stderr (results and paths go to stdout).
// On a terminal: one line redrawn in place with "\r" (bar, done/total, percent, rate, ETA), at
// most 10 redraws a second. Elsewhere (a pipe, a CI log): plain lines, one per 10 % step at most
// once a second (or, with `plainLines: "changes"`, one per change of the counts at most every
// 5 s), and always a final line.

export interface ProgressOptions {
  /** Work units in all (addresses). */
  total: number;
  /** Word after the counts: "addresses". */
  unit: string;
  /** Short text in front of the bar: "verifying". */
  label: string;
  /** Default process.stderr. */
  stream?: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  /** Default: whether `stream` is a terminal. */
  tty?: boolean;
  /** Default Date.now (tests pin it). */
  now?: () => number;
  /**
   * Off a terminal: a line per 10 % step (default; a local run moves steadily), or a line per
   * change of the counts (a server task can sit at 92 % for half an hour of retries, and a log
   * silent that long looks hung).
   */
  plainLines?: "steps" | "changes";
}

export interface Progress {
  /** Sets the units done so far (never goes back). */
  update(done: number, total?: number): void;
  /** Adds `n` units done. */
  tick(n: number): void;
  /** Draws the final state and ends the line. Idempotent. */
  finish(): void;
}

const REDRAW_MS = 100;
const PLAIN_MS = 1_000;
const CHANGE_MS = 5_000;

/** 0:07, 3:25, 1:02:03 */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
}

export function createProgress(opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stderr;
  const tty = opts.tty ?? stream.isTTY === true;
  const now = opts.now ?? Date.now;
  const started = now();
  let total = Math.max(0, opts.total);
  let done = 0;
  let lastDraw = -Infinity;
  let lastStep = -1;
  let lastLine = "";
  let finished = false;
  let drawn = false;

  const percent = (): number => (total === 0 ? 100 : Math.min(100, Math.floor((done / total) * 100)));

  function stats(): string {
    const elapsed = now() - started;
    const rate = elapsed > 0 ? (done / elapsed) * 1000 : 0;
    const rateText = rate >= 10 ? rate.toFixed(0) : rate.toFixed(1);
    const remaining = rate > 0 ? ((total - done) / rate) * 1000 : NaN;
    const eta = finished
      ? `in ${formatDuration(elapsed)}`
      : Number.isFinite(remaining)
        ? `ETA ${formatDuration(remaining)}`
        : "ETA --:--";
    return `${done}/${total} ${opts.unit} ${String(percent()).padStart(3)}% ${rateText}/s ${eta}`;
  }

  function ttyLine(): string {
    const text = stats();
    const columns = stream.columns && stream.columns > 0 ? stream.columns : 80;
    const width = Math.max(10, Math.min(40, columns - text.length - opts.label.length - 5));
    const filled = total === 0 ? width : Math.round((Math.min(done, total) / total) * width);
    const bar = "#".repeat(filled) + "-".repeat(width - filled);
    // "\x1b[K" clears what a longer previous line left to the right.
    return `\r${opts.label} [${bar}] ${text}\x1b[K`;
  }

  function draw(force: boolean): void {
    const t = now();
    if (tty) {
      if (!force && t - lastDraw < REDRAW_MS) return;
      stream.write(ttyLine());
      drawn = true;
      lastDraw = t;
      return;
    }
    const step = Math.floor(percent() / 10);
    const counts = `${done}/${total}`;
    const due =
      opts.plainLines === "changes"
        ? counts !== lastLine && t - lastDraw >= CHANGE_MS
        : step > lastStep && t - lastDraw >= PLAIN_MS;
    if (!force && !due) return;
    stream.write(`${opts.label}: ${stats()}\n`);
    lastStep = step;
    lastLine = counts;
    lastDraw = t;
  }

  return {
    update(value, newTotal) {
      if (finished) return;
      if (newTotal !== undefined) total = Math.max(0, newTotal);
      done = Math.min(Math.max(done, value), Math.max(total, value));
      draw(false);
    },
    tick(n) {
      this.update(done + n);
    },
    finish() {
      if (finished) return;
      finished = true;
      draw(true);
      if (tty && drawn) stream.write("\n");
    },
  };
}
