import { useEffect, useRef, useState } from "preact/hooks";
import type { CreditTransaction, Job, Task } from "@mailprobe/client";
import { client, downloadTask, errorMessage, request, type DownloadFormat } from "../api.ts";
import { BarChart } from "../components/bar-chart.tsx";
import { ConfirmDialog } from "../components/confirm-dialog.tsx";
import { Empty, ErrorMessage, Loading } from "../components/feedback.tsx";
import { Pager } from "../components/pager.tsx";
import { ProgressBar } from "../components/progress.tsx";
import { StatusBadge } from "../components/result-card.tsx";
import { STATUS_COLOR, StatusBars, VerdictSummary } from "../components/status-bars.tsx";
import { setFlash, takeFlash } from "../flash.ts";
import { announce, useApi, useInterval, useTitle } from "../hooks.ts";
import {
  addSample,
  etaWithoutRetriesMs,
  formatUntil,
  retriesLine,
  retriesSettleBy,
  type Sample,
} from "../lib/eta.ts";
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
import { GROUP_STATUSES } from "../lib/verdict-groups.ts";
import { hrefOf, navigate } from "../router.ts";

const POLL_MS = 2000;
const JOBS_PAGE = 25;
const LEDGER_PAGE = 100;
/** A task has a handful of ledger rows; late charges after a cancel add one per running group. */
const LEDGER_MAX_PAGES = 10;
/** The API's bound on a search text (src/http/schemas/tasks.ts JobsQuery.q). */
const SEARCH_MAX = 254;

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
      <ProgressSection task={t} samples={samples} running={running} onFinished={task.reload} />
      <BreakdownSection task={t} />
      <CostSection task={t} refreshKey={refreshKey} />
      <DownloadSection task={t} />
      <SeriesSection task={t} refreshKey={refreshKey} />
      <JobsSection taskId={t.id} refreshKey={refreshKey} />
      <ManageSection task={t} onCancelled={task.reload} />
    </section>
  );
}

function ProgressSection({
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
  const eta = running ? etaWithoutRetriesMs(samples, total, retries.pending) : null;
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
    summary = `${retriesLine(done, retries.pending, formatUntil(settleBy))}${
      others > 0 ? ` The other ${formatNumber(others)}: ${rateText.toLowerCase()}` : ""
    }`;
  } else {
    summary = `${formatNumber(done)} of ${plural(total, "address", "addresses")} done. ${rateText}`;
  }
  const file = task.file;
  return (
    <section class="card" aria-labelledby="progress-title">
      <h2 id="progress-title">Progress</h2>
      <ProgressBar percent={m.progress_percent} label="Verification progress" />
      <p>
        {summary}
        {running && <span class="muted small"> Updates every {POLL_MS / 1000} seconds.</span>}
      </p>
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

function BreakdownSection({ task }: { task: Task }) {
  const v = task.metrics.verification_status;
  const verified = RESULT_STATUSES.reduce((n, s) => n + v[s], 0);
  return (
    <section class="card" aria-labelledby="breakdown-title">
      <h2 id="breakdown-title">Results by status</h2>
      {verified === 0 ? (
        <p class="muted">No results yet: they appear here as addresses are verified.</p>
      ) : (
        <>
          <VerdictSummary counts={v} />
          <StatusBars title="Addresses by result status" counts={v} />
        </>
      )}
      <p class="muted small">
        Also flagged: {plural(v.role_based, "role address", "role addresses")} (info@, sales@…) and{" "}
        {plural(v.disposable_domain_emails, "disposable-domain address", "disposable-domain addresses")}.
      </p>
    </section>
  );
}

/** A task's ledger rows, every page: a reservation, its refunds, and late charges after a cancel. */
async function ledgerOfTask(taskId: string, signal: AbortSignal): Promise<CreditTransaction[]> {
  const rows: CreditTransaction[] = [];
  for (let page = 0; page < LEDGER_MAX_PAGES; page++) {
    const { transactions, total } = await request(
      client.GET("/api/v1/credits/transactions", {
        params: { query: { task_id: taskId, limit: LEDGER_PAGE, offset: page * LEDGER_PAGE } },
        signal,
      }),
    );
    rows.push(...transactions);
    if (rows.length >= total || transactions.length === 0) break;
  }
  return rows;
}

function CostSection({ task, refreshKey }: { task: Task; refreshKey: number }) {
  const ledger = useApi((signal) => ledgerOfTask(task.id, signal), [task.id, refreshKey]);
  const running = task.finished_at === null;
  const rows = ledger.data ?? [];
  const charged = rows.reduce((n, r) => n + (r.amount < 0 ? -r.amount : 0), 0);
  const refunded = rows.reduce((n, r) => n + (r.amount > 0 ? r.amount : 0), 0);
  return (
    <section class="card" aria-labelledby="cost-title">
      <h2 id="cost-title">Cost</h2>
      {ledger.error !== undefined && ledger.error !== null && (
        <ErrorMessage
          error={ledger.error}
          title="Could not load this task's credits"
          onRetry={ledger.reload}
        />
      )}
      {ledger.loading && !ledger.data && <Loading label="Loading this task's credits…" />}
      {ledger.data && (
        <>
          <dl class="counts">
            <div>
              <dt>Charged</dt>
              <dd>{plural(charged, "credit", "credits")}</dd>
            </div>
            <div>
              <dt>Refunded</dt>
              <dd>{plural(refunded, "credit", "credits")}</dd>
            </div>
            <div>
              <dt>{running ? "Cost so far" : "Cost"}</dt>
              <dd>{plural(charged - refunded, "credit", "credits")}</dd>
            </div>
          </dl>
          <p class="muted small">
            A list reserves one credit per distinct address when it starts.{" "}
            {running
              ? "Unknown results and failures are refunded together when it finishes."
              : "Unknown results, failures and addresses dropped by a cancel were refunded."}{" "}
            <a href={hrefOf.credits}>All your credit movements</a>
          </p>
        </>
      )}
    </section>
  );
}

/** The one-click downloads of the rows worth sending to (lib/verdict-groups.ts says "deliverable"). */
const CLEAN_LISTS: ReadonlyArray<{ label: string; statuses: readonly string[] }> = [
  { label: "Deliverable only", statuses: GROUP_STATUSES.deliverable },
  { label: "Deliverable + catch-all", statuses: [...GROUP_STATUSES.deliverable, "catchall"] },
];

function DownloadSection({ task }: { task: Task }) {
  const [statuses, setStatuses] = useState<string[]>([]);
  const [escape, setEscape] = useState(true);
  // What is being prepared, in words ("the CSV file", "the deliverable-only list").
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  const running = task.finished_at === null;

  async function download(format: DownloadFormat, only: readonly string[], what: string) {
    setBusy(what);
    setError(null);
    setDone(null);
    try {
      const name = await downloadTask(task.id, format, only, escape);
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
      <h3>Clean lists</h3>
      <p class="help" id="clean-help">
        One click, as CSV with your file's columns: only the addresses you can send to, or those plus the
        catch-all ones (risky: their domains accept every address).
      </p>
      <div class="button-row">
        {CLEAN_LISTS.map((c) => (
          <button
            key={c.label}
            type="button"
            disabled={busy !== null}
            aria-describedby="clean-help"
            onClick={() => void download("csv", c.statuses, `the ${c.label.toLowerCase()} list`)}
          >
            {`Download ${c.label.toLowerCase()}`}
          </button>
        ))}
      </div>
      <h3>Choose what to download</h3>
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
          In CSV and TXT, cells a spreadsheet would run as formulas (starting with <code>=</code> or{" "}
          <code>@</code>, or <code>+</code>/<code>-</code> followed by more than a number or phone number) get
          a leading <code>'</code>: a hostile cell could otherwise run commands or leak data when the file is
          opened. Phone numbers such as <code>+1 555 6330</code> are never touched, and XLSX needs no
          escaping. Keep it on for files people open in Excel or Sheets; turn it off for programs that need
          the raw values (an address like <code>+info@example.com</code> then stays unchanged).
        </p>
      </div>
      <div class="button-row">
        {(["csv", "txt", "xlsx"] as const).map((f) => (
          <button
            key={f}
            type="button"
            class="secondary"
            disabled={busy !== null}
            onClick={() => void download(f, statuses, `the ${f.toUpperCase()} file`)}
          >
            {`Download ${f.toUpperCase()}`}
          </button>
        ))}
      </div>
      {busy && <Loading label={`Preparing ${busy}…`} />}
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
                color: STATUS_COLOR[s],
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
  const [draft, setDraft] = useState("");
  const [search, setSearch] = useState("");
  const jobs = useApi(
    (signal) =>
      request(
        client.GET("/api/v1/tasks/{id}/jobs", {
          params: {
            path: { id: taskId },
            query: {
              limit: JOBS_PAGE,
              offset,
              ...(filter === "all" ? {} : { status: filter }),
              ...(search ? { q: search } : {}),
            },
          },
          signal,
        }),
      ),
    [taskId, offset, filter, search, refreshKey],
  );
  const shown = jobs.data?.jobs ?? [];
  const narrowed = filter !== "all" || search !== "";
  return (
    <section class="card" aria-labelledby="jobs-title">
      <h2 id="jobs-title">Addresses</h2>
      <form
        class="inline-form job-search"
        role="search"
        aria-label="Search this task's addresses"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch(draft.trim().slice(0, SEARCH_MAX));
          setOffset(0);
        }}
      >
        <div class="field grow">
          <label for="job-search">Search addresses</label>
          <input
            id="job-search"
            type="search"
            value={draft}
            maxLength={SEARCH_MAX}
            placeholder="part of an address, e.g. @example.com"
            onInput={(e) => setDraft(e.currentTarget.value)}
          />
        </div>
        <button type="submit" class="secondary">
          Search
        </button>
      </form>
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
      {jobs.data && jobs.data.count === 0 && !narrowed && <Empty title="This task has no addresses." />}
      {jobs.data && jobs.data.count === 0 && narrowed && (
        <p class="muted">
          {search
            ? `No address of this task contains “${search}”${filter === "all" ? "" : " with that status"}.`
            : "No address of this task has that status yet. Choose another status or All."}
        </p>
      )}
      {jobs.data && jobs.data.count > 0 && search && (
        <p class="muted small" role="status">
          {plural(jobs.data.count, "address contains", "addresses contain")} “{search}”.
        </p>
      )}
      {jobs.data && jobs.data.count > 0 && (
        <>
          {shown.length === 0 ? (
            <p class="muted">No address on this page. Go back to the first page.</p>
          ) : (
            <div class="table-scroll" tabIndex={0} role="region" aria-label="Addresses table">
              <table class="cards">
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
                      <td data-label="Result">
                        {job.email ? (
                          <StatusBadge status={job.email.status} />
                        ) : (
                          <span class="muted">{job.status}</span>
                        )}
                      </td>
                      <td data-label="Notes" class="small notes">
                        {jobNote(job)}
                      </td>
                      <td data-label="Attempts" class="num">
                        {job.attempts}
                      </td>
                      <td data-label="Updated">{formatDateTime(job.updated_at)}</td>
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
 * "Finish now" while the only work left is addresses waiting for a server's retry: they end
 * unknown (refunded) and the task completes, instead of staying open up to its retry window.
 */
function FinishNow({ task, waiting, onFinished }: { task: Task; waiting: number; onFinished: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const label = `Finish now: ${plural(waiting, "address is", "addresses are")} waiting for a server's retry`;

  async function finish() {
    setBusy(true);
    setError(null);
    try {
      await request(client.POST("/api/v1/tasks/{id}/finish", { params: { path: { id: task.id } } }));
      setConfirming(false);
      announce("The task was finished");
      onFinished();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

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
