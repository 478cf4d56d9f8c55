import type { TaskSummary } from "@mailprobe/client";
import { plural } from "./format.ts";

/** A task's name in lists and headings: its file, else its size. */
export const taskName = (t: Pick<TaskSummary, "file" | "metrics" | "id">): string =>
  t.file?.filename ?? `List of ${plural(t.metrics.total_email_addresses, "address", "addresses")}`;

export const sourceLabel = (source: string): string =>
  source === "frontend" ? "Dashboard" : source === "api_key" ? "API key" : source;

/** Running, finished or waiting, from the job counts. */
export function taskState(t: Pick<TaskSummary, "metrics">): "finished" | "running" | "queued" {
  const j = t.metrics.job_status;
  if (j.pending === 0 && j.processing === 0) return "finished";
  return j.processing > 0 || j.completed + j.failed > 0 ? "running" : "queued";
}

export const TASK_STATE_LABEL = { finished: "Finished", running: "Running", queued: "Queued" } as const;
