import { formatNumber } from "../lib/format.ts";

/** A labelled progress bar: native <progress>, so assistive tech reads its value. */
export function ProgressBar({ percent, label, id }: { percent: number; label: string; id?: string }) {
  const clamped = Math.max(0, Math.min(100, percent));
  return (
    <div class="progress">
      <progress id={id} max={100} value={clamped} aria-label={label} />
      <span class="progress-text">{formatNumber(Math.floor(clamped))} %</span>
    </div>
  );
}
