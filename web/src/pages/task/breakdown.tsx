// What the verified addresses came out as: the verdict breakdown and the per-day series.
import type { Task } from "@mailprobe/client";
import { client, request } from "../../api.ts";
import { BarChart } from "../../components/bar-chart.tsx";
import { ErrorMessage, Loading } from "../../components/feedback.tsx";
import { STATUS_COLOR, StatusBars, VerdictSummary } from "../../components/status-bars.tsx";
import { useApi } from "../../hooks.ts";
import { RESULT_STATUSES, STATUS_LABEL } from "../../lib/explain.ts";
import {
  daysAgo,
  endOfDay,
  formatDay,
  formatShortDay,
  isoDay,
  plural,
  pointsThrough,
  startOfDay,
} from "../../lib/format.ts";

export function BreakdownSection({ task }: { task: Task }) {
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

export function SeriesSection({ task, refreshKey }: { task: Task; refreshKey: number }) {
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
