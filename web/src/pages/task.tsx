import { useEffect, useRef, useState } from "preact/hooks";
import type { Job, Task } from "@mailprobe/client";
import { client, downloadTask, errorMessage, request, type DownloadFormat } from "../api.ts";
import { BarChart } from "../components/bar-chart.tsx";
import { ConfirmDialog } from "../components/confirm-dialog.tsx";
import { Empty, ErrorMessage, Loading } from "../components/feedback.tsx";
import { Pager } from "../components/pager.tsx";
import { ProgressBar } from "../components/progress.tsx";
import { StatusBadge } from "../components/result-card.tsx";
import { setFlash, takeFlash } from "../flash.ts";
import { announce, useApi, useInterval, useTitle } from "../hooks.ts";
import { addSample, etaMs, type Sample } from "../lib/eta.ts";
import { RESULT_STATUSES, STATUS_LABEL, UNKNOWN_REASON_MEANING } from "../lib/explain.ts";
import {
  daysAgo,
  endOfDay,
  formatDateTime,
  formatDay,
  formatDuration,
  formatNumber,
  formatShortDay,
  isoDay,
  plural,
  pointsThrough,
  startOfDay,
} from "../lib/format.ts";
import { sourceLabel, taskName } from "../lib/task-text.ts";
import { hrefOf, navigate } from "../router.ts";

const POLL_MS = 2000;
const JOBS_PAGE = 25;

const STATUS_COLOR: Record<string, string> = {
  valid: "--c-valid",
  invalid: "--c-invalid",
  catchall: "--c-catchall",
  invalid_syntax: "--c-syntax",
  disposable_domain: "--c-disposable",
  unknown: "--c-unknown",
};

export function TaskPage({ id }: { id: string }) {
  const [flash] = useState(takeFlash);
  const task = useApi(
    (signal) => request(client.GET("/api/v1/tasks/{id}", { params: { path: { id } }, signal })),
    [id],
  );
  const [samples, setSamples] = useState<Sample[]>([]);
  const [tick, setTick] = useState(0);
  const running = task.data ? task.data.finished_at === null : false;
  const wasRunning = useRef(false);
  useTitle(task.data ? taskName(task.data) : "Task");

  useInterval(
    () => {
      task.reload();
      setTick((n) => n + 1);
    },
    POLL_MS,
    running,
  );

  useEffect(() => {
    const t = task.data;
    if (!t) return;
    const j = t.metrics.job_status;
    setSamples((s) => addSample(s, { at: Date.now(), done: j.completed + j.failed }));
    if (t.finished_at && wasRunning.current) announce("The task has finished");
    wasRunning.current = t.finished_at === null;
  }, [task.data]);

  if (task.error !== undefined && task.error !== null && !task.data) {
    return (
      <section>
        <h1 tabIndex={-1}>Task</h1>
        <ErrorMessage error={task.error} title="Could not load this task" onRetry={task.reload} />
        <p>
          <a href={hrefOf.tasks}>Back to all tasks</a>
        </p>
      </section>
    );
  }
  if (!task.data) {
    return (
      <section>
        <h1 tabIndex={-1}>Task</h1>
        <Loading label="Loading the task…" />
      </section>
    );
  }
  const t = task.data;
  // Jobs and the daily series refresh every third poll while the task runs, and once at the end.
  const refreshKey = running ? Math.floor(tick / 3) : -1;

  return (
    <section class="stack-lg">
      <div>
        <p class="crumbs">
          <a href={hrefOf.tasks}>Tasks</a> / <span aria-current="page">{taskName(t)}</span>
        </p>
        <h1 tabIndex={-1}>{taskName(t)}</h1>
        <p class="muted">
          Created {formatDateTime(t.created_at)} from {sourceLabel(t.source)} · id <code>{t.id}</code>
        </p>
      </div>
      {flash && (
        <p class="notice success" role="status">
          {flash}
        </p>
      )}
      {task.error !== undefined && task.error !== null && (
        <ErrorMessage
          error={task.error}
          title="Refreshing the task failed; the figures below may be stale"
          onRetry={task.reload}
        />
      )}
      <ProgressSection task={t} samples={samples} running={running} />
      <BreakdownSection task={t} />
      <DownloadSection task={t} />
      <SeriesSection task={t} refreshKey={refreshKey} />
      <JobsSection taskId={t.id} refreshKey={refreshKey} />
      <ManageSection task={t} onCancelled={task.reload} />
    </section>
  );
}

function ProgressSection({ task, samples, running }: { task: Task; samples: Sample[]; running: boolean }) {
  const m = task.metrics;
  const j = m.job_status;
  const total = m.total_email_addresses;
  const eta = running ? etaMs(samples, total) : null;
  const retries = m.retries;
  const waitingOnRetries =
    running && retries.pending > 0 && j.processing === 0 && retries.pending === j.pending;
  let etaText: string;
  if (!running) {
    const took =
      task.started_at && task.finished_at
        ? `, ${formatDuration(Date.parse(task.finished_at) - Date.parse(task.started_at))} after it started`
        : "";
    etaText = task.cancelled_at
      ? `Cancelled ${formatDateTime(task.cancelled_at)}: addresses not verified by then were dropped and refunded.`
      : `Finished ${formatDateTime(task.finished_at)}${took}.`;
  } else if (waitingOnRetries) {
    etaText = `Waiting to retry ${plural(retries.pending, "address", "addresses")} whose mail servers deferred us or could not be reached${
      retries.next_attempt_at ? ` (next attempt ${formatDateTime(retries.next_attempt_at)})` : ""
    }.`;
  } else if (eta === null) {
    etaText =
      j.completed + j.failed === 0 && j.processing === 0
        ? "Queued: waiting for a worker."
        : "Estimating the time left…";
  } else {
    etaText = eta < 60_000 ? "Less than a minute left." : `About ${formatDuration(eta)} left.`;
  }
  const file = task.file;
  return (
    <section class="card" aria-labelledby="progress-title">
      <h2 id="progress-title">Progress</h2>
      <ProgressBar percent={m.progress_percent} label="Verification progress" />
      <p>
        {formatNumber(j.completed + j.failed)} of {plural(total, "address", "addresses")} done. {etaText}
        {running && <span class="muted small"> Updates every {POLL_MS / 1000} seconds.</span>}
      </p>
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

function BreakdownSection({ task }: { task: Task }) {
  const v = task.metrics.verification_status;
  const values = RESULT_STATUSES.map((s) => v[s]);
  const verified = values.reduce((a, b) => a + b, 0);
  return (
    <section class="card" aria-labelledby="breakdown-title">
      <h2 id="breakdown-title">Results by status</h2>
      {verified === 0 ? (
        <p class="muted">No results yet: they appear here as addresses are verified.</p>
      ) : (
        <BarChart
          title="Addresses by result status"
          summary={RESULT_STATUSES.map((s) => `${STATUS_LABEL[s]} ${v[s]}`).join(", ")}
          labels={RESULT_STATUSES.map((s) => STATUS_LABEL[s])}
          series={[{ label: "Addresses", values, color: "--c-accent" }]}
          horizontal
        />
      )}
      <p class="muted small">
        Also flagged: {plural(v.role_based, "role address", "role addresses")} (info@, sales@…) and{" "}
        {plural(v.disposable_domain_emails, "disposable-domain address", "disposable-domain addresses")}.
      </p>
    </section>
  );
}

function DownloadSection({ task }: { task: Task }) {
  const [statuses, setStatuses] = useState<string[]>([]);
  const [escape, setEscape] = useState(true);
  const [busy, setBusy] = useState<DownloadFormat | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const running = task.finished_at === null;

  async function download(format: DownloadFormat) {
    setBusy(format);
    setError(null);
    setDone(null);
    try {
      const name = await downloadTask(task.id, format, statuses, escape);
      setDone(`Saved ${name}.`);
      announce(`Downloaded ${name}`);
    } catch (err) {
      setError(err);
      announce(`Download failed: ${errorMessage(err)}`);
    } finally {
      setBusy(null);
    }
  }

  const toggle = (s: string, on: boolean) =>
    setStatuses((cur) => (on ? [...cur, s] : cur.filter((x) => x !== s)));

  return (
    <section class="card" aria-labelledby="download-title">
      <h2 id="download-title">Download results</h2>
      {running && (
        <p class="notice">
          The task is still running: a download holds what is finished so far, and rows not verified yet have
          status <code>pending</code>.
        </p>
      )}
      <fieldset class="checks">
        <legend>Statuses to include</legend>
        <p class="help">
          None ticked: every row. csv and xlsx keep your file's original columns, then the results.
        </p>
        {RESULT_STATUSES.map((s) => (
          <label key={s} class="check">
            <input
              type="checkbox"
              checked={statuses.includes(s)}
              onChange={(e) => toggle(s, e.currentTarget.checked)}
            />
            {STATUS_LABEL[s]}
          </label>
        ))}
      </fieldset>
      <div class="check-block">
        <label class="check">
          <input
            type="checkbox"
            checked={escape}
            onChange={(e) => setEscape(e.currentTarget.checked)}
            aria-describedby="escape-help"
          />
          Escape formulas
        </label>
        <p id="escape-help" class="help">
          Cells starting with <code>=</code>, <code>+</code>, <code>-</code> or <code>@</code> get a leading{" "}
          <code>'</code>, so a spreadsheet does not run them as formulas (a hostile cell could otherwise run
          commands or leak data when the file is opened). Keep it on for files people open in Excel or Sheets;
          turn it off for programs that need the raw values (an address like <code>+info@example.com</code>{" "}
          then stays unchanged).
        </p>
      </div>
      <div class="button-row">
        {(["csv", "txt", "xlsx"] as const).map((f) => (
          <button
            key={f}
            type="button"
            class="secondary"
            disabled={busy !== null}
            onClick={() => void download(f)}
          >
            {`Download ${f.toUpperCase()}`}
          </button>
        ))}
      </div>
      {busy && <Loading label={`Preparing the ${busy.toUpperCase()} file…`} />}
      {done && (
        <p class="muted" role="status">
          {done}
        </p>
      )}
      {error !== null && <ErrorMessage error={error} title="The download failed" />}
    </section>
  );
}

function SeriesSection({ task, refreshKey }: { task: Task; refreshKey: number }) {
  // From the task's first day to today, at most the 90 days the API allows.
  const createdDay = task.created_at.slice(0, 10);
  const earliest = daysAgo(89);
  const fromDay = createdDay < earliest ? earliest : createdDay;
  const series = useApi(
    (signal) =>
      request(
        client.GET("/api/v1/tasks/{id}/series", {
          params: {
            path: { id: task.id },
            query: { from: startOfDay(fromDay), to: endOfDay(isoDay(new Date())) },
          },
          signal,
        }),
      ),
    [task.id, fromDay, refreshKey],
  );
  const points = series.data ? pointsThrough(series.data.series, isoDay(new Date())) : null;
  return (
    <section class="card" aria-labelledby="series-title">
      <h2 id="series-title">Results per day</h2>
      {series.error !== undefined && series.error !== null && (
        <ErrorMessage error={series.error} title="Could not load the daily series" onRetry={series.reload} />
      )}
      {series.loading && !series.data && <Loading label="Loading the daily series…" />}
      {points &&
        (points.every((p) => p.total_email_addresses === 0) ? (
          <p class="muted">Nothing verified in this period yet.</p>
        ) : (
          <BarChart
            title="Addresses per day, by status"
            summary={points
              .map(
                (p) =>
                  `${formatDay(p.date)}: ${RESULT_STATUSES.reduce((n, s) => n + p.verification_status[s], 0)} verified, ${p.job_status.pending + p.job_status.processing} waiting`,
              )
              .join("; ")}
            labels={points.map((p) => formatShortDay(p.date))}
            series={[
              ...RESULT_STATUSES.map((s) => ({
                label: STATUS_LABEL[s],
                values: points.map((p) => p.verification_status[s]),
                color: STATUS_COLOR[s]!,
              })),
              {
                label: "Not verified yet",
                values: points.map((p) => p.job_status.pending + p.job_status.processing),
                color: "--c-pending",
              },
            ]}
            stacked
          />
        ))}
      <p class="muted small">
        Days are UTC; an address counts on the day its result was validated (one not verified yet, on the day
        it was queued).
      </p>
    </section>
  );
}

type JobFilter = "all" | "pending" | "processing" | "failed" | (typeof RESULT_STATUSES)[number];

function JobsSection({ taskId, refreshKey }: { taskId: string; refreshKey: number }) {
  const [offset, setOffset] = useState(0);
  const [filter, setFilter] = useState<JobFilter>("all");
  const jobs = useApi(
    (signal) =>
      request(
        client.GET("/api/v1/tasks/{id}/jobs", {
          params: {
            path: { id: taskId },
            query: { limit: JOBS_PAGE, offset, ...(filter === "all" ? {} : { status: filter }) },
          },
          signal,
        }),
      ),
    [taskId, offset, filter, refreshKey],
  );
  const shown = jobs.data?.jobs ?? [];
  return (
    <section class="card" aria-labelledby="jobs-title">
      <h2 id="jobs-title">Addresses</h2>
      <div class="field inline">
        <label for="job-filter">Filter by status</label>
        <select
          id="job-filter"
          value={filter}
          onChange={(e) => {
            setFilter(e.currentTarget.value as JobFilter);
            setOffset(0);
          }}
          aria-describedby="job-filter-help"
        >
          <option value="all">All</option>
          {RESULT_STATUSES.map((s) => (
            <option key={s} value={s}>
              {STATUS_LABEL[s]}
            </option>
          ))}
          <option value="pending">Not verified yet (pending)</option>
          <option value="processing">Being verified (processing)</option>
          <option value="failed">Failed</option>
        </select>
        <p id="job-filter-help" class="help">
          Shows only the addresses in that state or with that result, across all pages.
        </p>
      </div>
      {jobs.error !== undefined && jobs.error !== null && (
        <ErrorMessage error={jobs.error} title="Could not load the addresses" onRetry={jobs.reload} />
      )}
      {jobs.loading && !jobs.data && <Loading label="Loading addresses…" />}
      {jobs.data && jobs.data.count === 0 && filter === "all" && (
        <Empty title="This task has no addresses." />
      )}
      {jobs.data && jobs.data.count === 0 && filter !== "all" && (
        <p class="muted">No address of this task has that status yet. Choose another status or All.</p>
      )}
      {jobs.data && jobs.data.count > 0 && (
        <>
          {shown.length === 0 ? (
            <p class="muted">No address on this page. Go back to the first page.</p>
          ) : (
            <div class="table-scroll" tabIndex={0} role="region" aria-label="Addresses table">
              <table>
                <caption class="visually-hidden">Addresses of this task, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Address</th>
                    <th scope="col">Result</th>
                    <th scope="col">Notes</th>
                    <th scope="col" class="num">
                      Attempts
                    </th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {shown.map((job) => (
                    <tr key={job.id}>
                      <th scope="row" class="addr">
                        {job.email_address}
                      </th>
                      <td>
                        {job.email ? (
                          <StatusBadge status={job.email.status} />
                        ) : (
                          <span class="muted">{job.status}</span>
                        )}
                      </td>
                      <td class="small">{jobNote(job)}</td>
                      <td class="num">{job.attempts}</td>
                      <td>{formatDateTime(job.updated_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <Pager
            offset={offset}
            limit={JOBS_PAGE}
            total={jobs.data.count}
            label="Addresses pages"
            onChange={setOffset}
          />
        </>
      )}
    </section>
  );
}

/**
 * Cancel (running: pending addresses are dropped and refunded, addresses being verified finish)
 * or delete (finished: jobs, results and the stored file go; the credit history stays).
 */
function ManageSection({ task, onCancelled }: { task: Task; onCancelled: () => void }) {
  const running = task.finished_at === null;
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const pending = task.metrics.job_status.pending;

  async function act() {
    setBusy(true);
    setError(null);
    try {
      if (running) {
        await request(client.POST("/api/v1/tasks/{id}/cancel", { params: { path: { id: task.id } } }));
        setConfirming(false);
        announce("The task was cancelled");
        onCancelled();
      } else {
        await request(client.DELETE("/api/v1/tasks/{id}", { params: { path: { id: task.id } } }));
        setFlash(`Deleted the results of ${taskName(task)}.`);
        navigate(hrefOf.tasks);
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="card" aria-labelledby="manage-title">
      <h2 id="manage-title">{running ? "Stop this task" : "Delete this task"}</h2>
      {running ? (
        <p>
          Cancelling drops the addresses not verified yet and returns their credits at once; addresses being
          verified right now finish and keep their results. The webhook, if set, is called with status{" "}
          <code>cancelled</code>.
        </p>
      ) : (
        <p>
          Deleting removes this task's addresses, results and uploaded file for good. Your credit history
          keeps what was charged and refunded.
        </p>
      )}
      <div class="button-row">
        <button
          type="button"
          class="danger-outline"
          onClick={() => {
            setError(null);
            setConfirming(true);
          }}
        >
          {running ? "Cancel task" : "Delete task"}
        </button>
      </div>
      {confirming && (
        <ConfirmDialog
          title={running ? "Cancel this task?" : "Delete this task's data?"}
          confirmLabel={running ? "Cancel task" : "Delete task"}
          busy={busy}
          onConfirm={() => void act()}
          onCancel={() => setConfirming(false)}
        >
          <p>
            {running
              ? `${plural(pending, "address", "addresses")} not verified yet will be dropped and refunded. This cannot be undone.`
              : "Its addresses, results and file are deleted. This cannot be undone."}
          </p>
          {error !== null && (
            <ErrorMessage
              error={error}
              title={running ? "The task was not cancelled" : "The task was not deleted"}
            />
          )}
        </ConfirmDialog>
      )}
    </section>
  );
}

function jobNote(job: Job): string {
  const e = job.email;
  if (e) {
    const notes: string[] = [];
    if (e.unknown_reason) notes.push(UNKNOWN_REASON_MEANING[e.unknown_reason] ?? e.unknown_reason);
    if (e.is_catchall && e.status !== "catchall") notes.push("Catch-all domain.");
    if (e.needs_physical_verify) notes.push("Needs a real message to confirm.");
    if (e.is_role_based) notes.push("Role address.");
    return notes.join(" ");
  }
  if (job.status === "pending" && job.unknown_reason) {
    return `Retrying ${job.next_attempt_at ? formatDateTime(job.next_attempt_at) : "soon"}: ${
      UNKNOWN_REASON_MEANING[job.unknown_reason] ?? job.unknown_reason
    }`;
  }
  if (job.status === "failed") return "Could not be verified (internal error); its credit is refunded.";
  return "";
}
