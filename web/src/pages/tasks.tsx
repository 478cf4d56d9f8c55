import { useState } from "preact/hooks";
import type { Task } from "@mailprobe/client";
import { client, request } from "../api.ts";
import { Empty, ErrorMessage, Loading } from "../components/feedback.tsx";
import { PagedTable } from "../components/paged-table.tsx";
import { ProgressBar } from "../components/progress.tsx";
import { takeFlash } from "../flash.ts";
import { useApi, useInterval, useTitle } from "../hooks.ts";
import { RESULT_STATUSES, STATUS_LABEL } from "../lib/explain.ts";
import { endOfDay, formatDateTime, formatNumber, startOfDay } from "../lib/format.ts";
import { TASK_STATE_LABEL, sourceLabel, taskName, taskState } from "../lib/task-text.ts";
import { hrefOf } from "../router.ts";

const PAGE_SIZE = 20;

/** Addresses without a result yet (pending, being verified), failed or dropped by a cancel. */
const notVerified = (t: Pick<Task, "metrics">): number =>
  t.metrics.total_email_addresses - RESULT_STATUSES.reduce((n, s) => n + t.metrics.verification_status[s], 0);

interface Filters {
  kind: "all" | "file" | "json";
  from: string;
  until: string;
}

const NO_FILTERS: Filters = { kind: "all", from: "", until: "" };

export function TasksPage() {
  useTitle("Tasks");
  const [flash] = useState(takeFlash);
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [offset, setOffset] = useState(0);
  const tasks = useApi(
    (signal) =>
      request(
        client.GET("/api/v1/tasks", {
          params: {
            query: {
              limit: PAGE_SIZE,
              offset,
              ...(filters.kind !== "all" ? { is_file_backed: filters.kind === "file" } : {}),
              ...(filters.from ? { created_after: startOfDay(filters.from) } : {}),
              ...(filters.until ? { created_before: endOfDay(filters.until) } : {}),
            },
          },
          signal,
        }),
      ),
    [offset, filters],
  );
  const anyRunning = tasks.data?.tasks.some((t) => taskState(t) !== "finished") ?? false;
  useInterval(tasks.reload, 5000, anyRunning);
  const filtered = filters.kind !== "all" || filters.from !== "" || filters.until !== "";

  return (
    <section>
      <div class="page-head">
        <h1 tabIndex={-1}>Tasks</h1>
        <a class="button" href={hrefOf.lists}>
          Verify a list
        </a>
      </div>
      {flash && (
        <p class="notice success" role="status">
          {flash}
        </p>
      )}
      <form
        class="card filters"
        aria-label="Filter tasks"
        onSubmit={(e) => {
          e.preventDefault();
          setOffset(0);
          setFilters(draft);
        }}
      >
        <div class="field">
          <label for="task-kind">Kind</label>
          <select
            id="task-kind"
            value={draft.kind}
            onChange={(e) => setDraft({ ...draft, kind: e.currentTarget.value as Filters["kind"] })}
          >
            <option value="all">All tasks</option>
            <option value="file">File uploads</option>
            <option value="json">Address lists sent as JSON</option>
          </select>
        </div>
        <div class="field">
          <label for="task-from">Created from</label>
          <input
            id="task-from"
            type="date"
            value={draft.from}
            max={draft.until || undefined}
            onInput={(e) => setDraft({ ...draft, from: e.currentTarget.value })}
          />
        </div>
        <div class="field">
          <label for="task-until">Created until</label>
          <input
            id="task-until"
            type="date"
            value={draft.until}
            min={draft.from || undefined}
            onInput={(e) => setDraft({ ...draft, until: e.currentTarget.value })}
          />
        </div>
        <div class="filter-actions">
          <button type="submit">Apply filters</button>
          {filtered && (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setDraft(NO_FILTERS);
                setFilters(NO_FILTERS);
                setOffset(0);
              }}
            >
              Clear filters
            </button>
          )}
        </div>
      </form>
      {tasks.error !== undefined && tasks.error !== null && (
        <ErrorMessage error={tasks.error} title="Could not load the tasks" onRetry={tasks.reload} />
      )}
      {tasks.loading && !tasks.data && <Loading label="Loading tasks…" />}
      {tasks.data && tasks.data.tasks.length === 0 && (
        <Empty title={filtered ? "No task matches these filters." : "No tasks yet."}>
          {filtered ? (
            <p>Widen the dates or clear the filters.</p>
          ) : (
            <p>
              <a href={hrefOf.lists}>Upload a list</a> to verify many addresses at once, or send them to{" "}
              <code>POST /api/v1/tasks</code>.
            </p>
          )}
        </Empty>
      )}
      {tasks.data && tasks.data.tasks.length > 0 && (
        <>
          <PagedTable
            region="Tasks table"
            tableClass="tasks cards"
            caption="Tasks, newest first: the result columns and Not verified add up to Addresses"
            head={
              <>
                <th scope="col">Task</th>
                <th scope="col">Created</th>
                <th scope="col">Source</th>
                <th scope="col" class="num">
                  Addresses
                </th>
                <th scope="col">Progress</th>
                {RESULT_STATUSES.map((s) => (
                  <th key={s} scope="col" class="num">
                    {STATUS_LABEL[s]}
                  </th>
                ))}
                <th scope="col" class="num">
                  Not verified
                </th>
              </>
            }
            page={{
              offset: offset,
              limit: PAGE_SIZE,
              total: tasks.data.count,
              label: "Tasks pages",
              onChange: setOffset,
            }}
          >
            {tasks.data.tasks.map((t) => {
              const state = taskState(t);
              const v = t.metrics.verification_status;
              return (
                <tr key={t.id}>
                  <th scope="row">
                    <a href={hrefOf.task(t.id)}>{taskName(t)}</a>
                  </th>
                  <td data-label="Created">{formatDateTime(t.created_at)}</td>
                  <td data-label="Source">{sourceLabel(t.source)}</td>
                  <td data-label="Addresses" class="num">
                    {formatNumber(t.metrics.total_email_addresses)}
                  </td>
                  <td data-label="Progress">
                    <ProgressBar percent={t.metrics.progress_percent} label={`Progress of ${taskName(t)}`} />
                    <span class="small muted">{TASK_STATE_LABEL[state]}</span>
                  </td>
                  {RESULT_STATUSES.map((s) => (
                    <td key={s} data-label={STATUS_LABEL[s]} class="num">
                      {formatNumber(v[s])}
                    </td>
                  ))}
                  <td data-label="Not verified" class="num">
                    {formatNumber(notVerified(t))}
                  </td>
                </tr>
              );
            })}
          </PagedTable>
        </>
      )}
    </section>
  );
}
