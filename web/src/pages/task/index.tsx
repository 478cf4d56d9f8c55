// The task page: polls the task while it runs and stacks its sections (one file each here).
import { useEffect, useRef, useState } from "preact/hooks";
import { client, request } from "../../api.ts";
import { ErrorMessage, Loading } from "../../components/feedback.tsx";
import { takeFlash } from "../../flash.ts";
import { announce, useApi, useInterval, useTitle } from "../../hooks.ts";
import { addSample, type Sample } from "../../lib/eta.ts";
import { formatDateTime } from "../../lib/format.ts";
import { sourceLabel, taskName } from "../../lib/task-text.ts";
import { hrefOf } from "../../router.ts";
import { POLL_MS, ProgressSection } from "./progress.tsx";
import { BreakdownSection, SeriesSection } from "./breakdown.tsx";
import { CostSection } from "./cost.tsx";
import { DownloadSection } from "./downloads.tsx";
import { JobsSection } from "./jobs.tsx";
import { ManageSection } from "./manage.tsx";

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
      {/* Once finished, the clean lists are what the user came for: at the top. */}
      {!running && <DownloadSection task={t} />}
      <BreakdownSection task={t} />
      <CostSection task={t} refreshKey={refreshKey} />
      {running && <DownloadSection task={t} />}
      <SeriesSection task={t} refreshKey={refreshKey} />
      <JobsSection taskId={t.id} refreshKey={refreshKey} />
      <ManageSection task={t} onCancelled={task.reload} />
    </section>
  );
}
