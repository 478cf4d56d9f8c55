// The task's addresses: search, status filter and the paged table.
import { useState } from "preact/hooks";
import type { Job } from "@mailprobe/client";
import { client, request } from "../../api.ts";
import { Empty, ErrorMessage, Loading } from "../../components/feedback.tsx";
import { PagedTable } from "../../components/paged-table.tsx";
import { StatusBadge } from "../../components/result-card.tsx";
import { useApi } from "../../hooks.ts";
import { RESULT_STATUSES, STATUS_LABEL, UNKNOWN_REASON_MEANING } from "../../lib/explain.ts";
import { formatDateTime, plural } from "../../lib/format.ts";

const JOBS_PAGE = 25;

/** The API's bound on a search text (src/http/schemas/tasks.ts JobsQuery.q). */
const SEARCH_MAX = 254;

type JobFilter = "all" | "pending" | "processing" | "failed" | (typeof RESULT_STATUSES)[number];

export function JobsSection({ taskId, refreshKey }: { taskId: string; refreshKey: number }) {
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
          <PagedTable
            instead={
              shown.length === 0 ? (
                <p class="muted">No address on this page. Go back to the first page.</p>
              ) : undefined
            }
            region="Addresses table"
            caption="Addresses of this task, newest first"
            head={
              <>
                <th scope="col">Address</th>
                <th scope="col">Result</th>
                <th scope="col">Notes</th>
                <th scope="col" class="num">
                  Attempts
                </th>
                <th scope="col">Updated</th>
              </>
            }
            page={{
              offset: offset,
              limit: JOBS_PAGE,
              total: jobs.data.count,
              label: "Addresses pages",
              onChange: setOffset,
            }}
          >
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
          </PagedTable>
        </>
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
