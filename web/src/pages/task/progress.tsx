// Progress, the estimate of what is left and "Finish now" while only retries remain.
import { useState } from "preact/hooks";
import type { Task } from "@mailprobe/client";
import { client, request } from "../../api.ts";
import { ConfirmDialog } from "../../components/confirm-dialog.tsx";
import { ErrorMessage } from "../../components/feedback.tsx";
import { ProgressBar } from "../../components/progress.tsx";
import { announce, useAction } from "../../hooks.ts";
import {
  etaWithoutRetriesMs,
  etaWithPacesMs,
  formatUntil,
  pacedLine,
  retriesLine,
  retriesSettleBy,
  type Sample,
} from "../../lib/eta.ts";
import { formatDateTime, formatDuration, formatNumber, plural } from "../../lib/format.ts";

export const POLL_MS = 2000;

export function ProgressSection({
  task,
  samples,
  running,
  onFinished,
}: {
  task: Task;
  samples: Sample[];
  running: boolean;
  onFinished: () => void;
}) {
  const m = task.metrics;
  const j = m.job_status;
  const total = m.total_email_addresses;
  const retries = m.retries;
  const done = j.completed + j.failed;
  const settleBy = running ? retriesSettleBy(retries) : null;
  // Work other than the retries: its time comes from the rate, the retries' from their schedule.
  const others = j.pending - retries.pending + j.processing;
  // Addresses a provider's pace holds back go at that pace, not at the task's observed rate.
  const paced = running ? m.paced : [];
  const pacedPending = paced.reduce((n, p) => n + p.pending, 0);
  const eta = running
    ? etaWithPacesMs(etaWithoutRetriesMs(samples, total, retries.pending + pacedPending), paced)
    : null;
  const rateText =
    eta === null
      ? done === 0 && j.processing === 0
        ? "Queued: waiting for a worker."
        : "Estimating the time left…"
      : eta < 60_000
        ? "Less than a minute left."
        : `About ${formatDuration(eta)} left.`;
  let summary: string;
  if (!running) {
    const took =
      task.started_at && task.finished_at
        ? `, ${formatDuration(Date.parse(task.finished_at) - Date.parse(task.started_at))} after it started`
        : "";
    summary = `${formatNumber(done)} of ${plural(total, "address", "addresses")} done. ${
      task.cancelled_at
        ? `Cancelled ${formatDateTime(task.cancelled_at)}: addresses not verified by then were dropped and refunded.`
        : `Finished ${formatDateTime(task.finished_at)}${took}.`
    }`;
  } else if (settleBy !== null) {
    const next = retries.next_attempt_at === null ? null : formatUntil(retries.next_attempt_at);
    summary = `${retriesLine(done, retries.pending, formatUntil(settleBy), next)}${
      others > 0 ? ` The other ${formatNumber(others)}: ${rateText.toLowerCase()}` : ""
    }`;
  } else {
    summary = `${formatNumber(done)} of ${plural(total, "address", "addresses")} done. ${rateText}`;
  }
  const file = task.file;
  // The API counts cancelled addresses as final (progress 1); the bar shows what was verified.
  const verifiedPercent = total > 0 ? (done / total) * 100 : 0;
  return (
    <section class="card" aria-labelledby="progress-title">
      <h2 id="progress-title">Progress</h2>
      {task.cancelled_at ? (
        <ProgressBar percent={verifiedPercent} label="Verified before the cancellation" />
      ) : (
        <ProgressBar percent={m.progress_percent} label="Verification progress" />
      )}
      <p>
        {summary}
        {running && <span class="muted small"> Updates every {POLL_MS / 1000} seconds.</span>}
      </p>
      {paced.length > 0 && (
        <ul class="small" aria-label="Providers pacing this task">
          {paced.map((p) => (
            <li key={p.provider}>{pacedLine(p)}</li>
          ))}
        </ul>
      )}
      {running && retries.pending > 0 && retries.pending === j.pending && (
        <FinishNow task={task} waiting={retries.pending} onFinished={onFinished} />
      )}
      <dl class="counts">
        <div>
          <dt>Pending</dt>
          <dd>{formatNumber(j.pending)}</dd>
        </div>
        <div>
          <dt>Processing</dt>
          <dd>{formatNumber(j.processing)}</dd>
        </div>
        <div>
          <dt>Completed</dt>
          <dd>{formatNumber(j.completed)}</dd>
        </div>
        <div>
          <dt>Failed</dt>
          <dd>{formatNumber(j.failed)}</dd>
        </div>
        {retries.pending > 0 && (
          <div>
            <dt>Waiting to retry</dt>
            <dd>{formatNumber(retries.pending)}</dd>
          </div>
        )}
      </dl>
      {file && (
        <p class="muted small">
          From {file.filename}: {plural(file.submitted_count, "row", "rows")} with an address,{" "}
          {plural(file.unique_count, "distinct address", "distinct addresses")},{" "}
          {plural(file.duplicate_count, "duplicate", "duplicates")},{" "}
          {plural(file.skipped_count, "row", "rows")} skipped (no address).
        </p>
      )}
      {task.webhook_url && (
        <p class="muted small">
          Webhook: <code>{task.webhook_url}</code> is called when the task finishes.
        </p>
      )}
    </section>
  );
}

/**
 * "Finish now" while the only work left is addresses waiting for a server's retry: they end
 * unknown (refunded) and the task completes, instead of staying open up to its retry window.
 */
function FinishNow({ task, waiting, onFinished }: { task: Task; waiting: number; onFinished: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const label = `Finish now: ${plural(waiting, "address is", "addresses are")} waiting for a server's retry`;
  const {
    busy,
    error,
    setError,
    run: finish,
  } = useAction(async () => {
    await request(client.POST("/api/v1/tasks/{id}/finish", { params: { path: { id: task.id } } }));
    setConfirming(false);
    announce("The task was finished");
    onFinished();
  });

  return (
    <div class="button-row">
      <button
        type="button"
        onClick={() => {
          setError(null);
          setConfirming(true);
        }}
      >
        {label}
      </button>
      {confirming && (
        <ConfirmDialog
          title="Finish this task now?"
          confirmLabel="Finish now"
          busy={busy}
          onConfirm={() => void finish()}
          onCancel={() => setConfirming(false)}
        >
          <p>
            {plural(waiting, "address", "addresses")} still waiting for a mail server to let us retry will be
            reported as <code>unknown</code>, with the reason the server gave, and their credits returned. The
            results already verified stay as they are, and the webhook, if set, is called with status{" "}
            <code>completed</code>.
          </p>
          {error !== null && <ErrorMessage error={error} title="The task was not finished" />}
        </ConfirmDialog>
      )}
    </div>
  );
}
