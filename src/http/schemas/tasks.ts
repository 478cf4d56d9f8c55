import { Type } from "typebox";
import { validationError } from "../../lib/app-error.ts";
import { toMetricsReply } from "../../webhooks/payload.ts";
import {
  emptyMetrics,
  type JobView,
  type TaskMetrics,
  type TaskPage,
  type TaskRecord,
  type TaskView,
} from "../../tasks/service.ts";
import type { UploadRecord } from "../../uploads/service.ts";
import { VERIFICATION_STATUSES } from "../../verify/index.ts";
import { MAX_EMAIL_INPUT_LENGTH } from "../../lib/address-shape.ts";
import { MAX_RETRY_WINDOW_MINUTES, MAX_TASK_EMAILS } from "../../tasks/task-input.ts";
import { webhookUrlProblem } from "../../webhooks/url-policy.ts";
import { DateTime, documented, MAX_OFFSET, ref, StringEnum, Uuid, WebhookUrlDocumented } from "./common.ts";
import { JOB_STATUSES, JobStatusSchema, TaskSourceSchema, UploadStatusSchema } from "./enums.ts";
import { UploadCounts, uploadCounts } from "./uploads.ts";
import { toVerificationReply, VerificationReply } from "./verification.ts";
import { isUnknownReason } from "../../verify/index.ts";

const RetryWindowMinutes = Type.Integer({
  minimum: 0,
  maximum: MAX_RETRY_WINDOW_MINUTES,
  description:
    "Minutes after the task starts during which addresses a server deferred (greylisting, 4xx) or that were unreachable are retried; a retry that would come later is not made and the address is settled as `unknown` (refunded). Default: the server's TASK_RETRY_WINDOW_MINUTES (60)",
});

const EMAILS_DESCRIPTION = "1 to 10,000 addresses; duplicates are verified and billed once";
const WEBHOOK_URL_DESCRIPTION = "Absolute http(s) URL called when the task completes";

export const CreateTaskBody = Type.Object(
  {
    emails: Type.Array(Type.String(), { maxItems: MAX_TASK_EMAILS, description: EMAILS_DESCRIPTION }),
    webhook_url: Type.Optional(Type.String({ description: WEBHOOK_URL_DESCRIPTION })),
    retry_window_minutes: Type.Optional(RetryWindowMinutes),
  },
  { additionalProperties: false },
);

/**
 * The body as the document states it: checkTaskEmails refuses an empty list and entries that are
 * blank or longer than 320 characters, checkWebhookUrl what is not an absolute http(s) URL, each
 * naming the entry in its own words.
 */
export const CreateTaskBodyDocumented = documented(CreateTaskBody, {
  emails: Type.Array(Type.String({ minLength: 1, maxLength: MAX_EMAIL_INPUT_LENGTH }), {
    minItems: 1,
    maxItems: MAX_TASK_EMAILS,
    description: EMAILS_DESCRIPTION,
  }),
  webhook_url: WebhookUrlDocumented(WEBHOOK_URL_DESCRIPTION),
});

/**
 * The optional Idempotency-Key of `POST /api/v1/tasks`, for the OpenAPI document only: the route
 * reads and checks it itself (routes/tasks.ts), so Fastify never validates this schema.
 */
export const IdempotencyHeaders = Type.Object({
  "Idempotency-Key": Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description:
        "Makes retries safe for 24 hours: the same key with the same body returns the task the first request created (billed once); with a different body it is a 400.",
    }),
  ),
});

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const TaskSource = ref(TaskSourceSchema);

export const CreatedTaskReply = Type.Object(
  {
    id: Uuid,
    user_id: Type.Union([Uuid, Type.Null()]),
    webhook_url: Type.Union([Type.String(), Type.Null()]),
    source: TaskSource,
    created_at: DateTime,
    email_count: Type.Integer({
      description:
        "Emails submitted (the spec's definition): every entry of `emails`, duplicates and `invalid_syntax` addresses included; = submitted_count. The distinct, billed count is unique_count",
    }),
    submitted_count: Type.Integer({ description: "Entries submitted, duplicates included; = email_count" }),
    unique_count: Type.Integer({
      description:
        "Distinct canonical addresses: the jobs queued and the credits reserved (sandbox addresses excepted)",
    }),
    domain_count: Type.Integer(),
  },
  { $id: "CreatedTask", description: "A batch task as created by `POST /api/v1/tasks`" },
);

export const MetricsSchema = Type.Object(
  {
    total_email_addresses: Type.Integer(),
    job_status: Type.Object({
      pending: Type.Integer(),
      processing: Type.Integer(),
      completed: Type.Integer(),
      failed: Type.Integer(),
      cancelled: Type.Integer({
        description: "Not in the spec's object: jobs dropped by a cancel before they ran (not billed)",
      }),
    }),
    progress: Type.Number({
      description: "Share of jobs in a final state (completed, failed or cancelled), 0 to 1",
    }),
    progress_percent: Type.Number({ description: "progress × 100, two decimals" }),
    verification_status: Type.Object({
      valid: Type.Integer(),
      invalid: Type.Integer(),
      catchall: Type.Integer(),
      invalid_syntax: Type.Integer(),
      disposable_domain: Type.Integer(),
      unknown: Type.Integer(),
      role_based: Type.Integer(),
      disposable_domain_emails: Type.Integer(),
    }),
    last_verification_requested_at: Nullable(DateTime),
    last_verification_completed_at: Nullable(DateTime),
    retries: Type.Object(
      {
        pending: Type.Integer({
          description: "Pending jobs waiting for a retry (greylisting, unreachable host…)",
        }),
        next_attempt_at: Nullable(DateTime),
        last_attempt_at: Type.Union([DateTime, Type.Null()], {
          description: "The latest retry scheduled now (a retry may schedule another, up to settles_at)",
        }),
        settles_at: Type.Union([DateTime, Type.Null()], {
          description:
            "When the task's retries end (its retry window, or a finish): no retry is made after it, and the addresses still waiting are settled as unknown. Null with no retry pending, or for a task without a window",
        }),
      },
      { description: "Not in the spec's metrics object: when the task's retries are due" },
    ),
    paced: Type.Array(
      Type.Object({
        provider: Type.String({
          description: "The provider's key: google, yahoo, outlook, … or its MX domain",
        }),
        name: Type.String({ description: "Its name for people, e.g. Gmail" }),
        pending: Type.Integer({ description: "This task's addresses still to ask it" }),
        rate_per_minute: Type.Union([Type.Number(), Type.Null()], {
          description: "Recipients per minute its pace allows; null while the pace is being learnt",
        }),
        expected_done_at: Type.Union([DateTime, Type.Null()], {
          description: "When the last of them should be answered at that pace; null while it is being learnt",
        }),
      }),
      {
        description:
          "Not in the spec's metrics object: providers that asked us to slow down and whose pace holds this task's addresses back (they are asked as the pace allows, within the task's retry window)",
      },
    ),
  },
  { $id: "TaskMetrics", description: "Aggregated progress and verdict counts of a batch task" },
);

export const FileSchema = Type.Object(
  {
    upload_id: Uuid,
    task_id: Uuid,
    filename: Type.String({ description: "Original file name" }),
    ...UploadCounts,
    status: ref(UploadStatusSchema),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: "TaskFile", description: "The upload a file-backed task came from" },
);

const taskSummaryProperties = {
  id: Uuid,
  user_id: Type.Union([Uuid, Type.Null()]),
  webhook_url: Type.Union([Type.String(), Type.Null()]),
  source: TaskSource,
  created_at: DateTime,
  updated_at: DateTime,
  is_file_backed: Type.Boolean(),
  file: Type.Union([ref(FileSchema), Type.Null()], { description: "Set when is_file_backed is true" }),
  metrics: ref(MetricsSchema),
};

export const TaskSummary = Type.Object(taskSummaryProperties, {
  $id: "TaskSummary",
  description: "A batch task as listed by `GET /api/v1/tasks`",
});

export const TaskDetail = Type.Object(
  {
    ...taskSummaryProperties,
    started_at: Nullable(DateTime),
    finished_at: Nullable(DateTime),
    cancelled_at: Type.Union([DateTime, Type.Null()], {
      description: "Not in the spec: when the task was cancelled (finished_at is the same moment), else null",
    }),
    retry_window_minutes: Type.Union([RetryWindowMinutes, Type.Null()], {
      description:
        "Not in the spec: the task's retry window (null: tasks created before it existed, no limit)",
    }),
  },
  // Not named `Task`: C# generators put it beside System.Threading.Tasks.Task, which every async
  // method returns, and the two names collide (microsoft/kiota#1437, Azure/autorest#3007).
  {
    $id: "TaskDetail",
    description: "A batch task with its lifecycle times, as `GET /api/v1/tasks/{id}` shows it",
  },
);

export const ListTasksQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 10 }),
    offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 }),
    is_file_backed: Type.Optional(Type.Boolean()),
    created_after: Type.Optional(Type.String({ description: "RFC 3339" })),
    created_before: Type.Optional(Type.String({ description: "RFC 3339" })),
  },
  { additionalProperties: false },
);

/** The dates are parsed by the handler (reports/date-range.ts parseRfc3339), with its reasons. */
export const ListTasksQueryDocumented = documented(ListTasksQuery, {
  created_after: Type.String({ format: "date-time", description: "RFC 3339, with an offset" }),
  created_before: Type.String({ format: "date-time", description: "RFC 3339, with an offset" }),
});

export const ListTasksReply = Type.Object(
  {
    tasks: Type.Array(ref(TaskSummary)),
    source: Type.Optional(TaskSource),
    count: Type.Integer({ description: "Tasks matching the filter (all pages)" }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { $id: "TaskList", description: "A page of tasks; `source` is present when all share one origin" },
);

export const SeriesQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ description: "RFC 3339; with `to`" })),
    to: Type.Optional(Type.String({ description: "RFC 3339; with `from`" })),
  },
  { additionalProperties: false },
);

/** The range is checked by the handler (reports/date-range.ts parseDateRange), with its reasons. */
export const SeriesQueryDocumented = documented(SeriesQuery, {
  from: Type.String({ format: "date-time", description: "RFC 3339, with an offset; with `to`" }),
  to: Type.String({ format: "date-time", description: "RFC 3339, with an offset; with `from`" }),
});

export const SeriesPointSchema = Type.Object(
  {
    date: Type.String({ format: "date", description: "UTC day, YYYY-MM-DD" }),
    ...MetricsSchema.properties,
  },
  { $id: "TaskSeriesPoint", description: "The task's metrics over the jobs created on one UTC day" },
);

export const SeriesReply = Type.Object(
  {
    task_id: Uuid,
    source: TaskSource,
    series: Type.Array(ref(SeriesPointSchema)),
  },
  { $id: "TaskSeries", description: "One point per UTC day of the range" },
);

export const JobsQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 10 }),
    offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 }),
    status: Type.Optional(
      StringEnum(
        [...JOB_STATUSES, ...VERIFICATION_STATUSES],
        "Only jobs in this state (pending, processing, completed, failed, cancelled) or with this result status (valid, invalid, …); `count` is then the number that match",
      ),
    ),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 254,
        description:
          "Only jobs whose address contains this text (case-insensitive, e.g. a domain or a name); combines with `status`, and `count` is then the number that match",
      }),
    ),
  },
  { additionalProperties: false },
);

export const JobSchema = Type.Object(
  {
    id: Uuid,
    task_id: Uuid,
    email_address: Type.String(),
    status: ref(JobStatusSchema),
    attempts: Type.Integer({ description: "Verification attempts made so far" }),
    unknown_reason: Type.Union([Type.String(), Type.Null()], {
      description: "While pending after an attempt: why the last one did not settle it (e.g. greylisted)",
    }),
    next_attempt_at: Type.Union([DateTime, Type.Null()], {
      description: "While pending: when the job is next due",
    }),
    email: Type.Optional(ref(VerificationReply, "The result, once the job has one")),
    created_at: DateTime,
    updated_at: DateTime,
  },
  { $id: "Job", description: "One address of a batch task" },
);

export const JobsReply = Type.Object(
  {
    jobs: Type.Array(ref(JobSchema)),
    count: Type.Integer({ description: "Jobs of the task (all pages) that match the status filter, if any" }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { $id: "JobList", description: "A page of a task's jobs, newest first" },
);

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

const toFileReply = (u: UploadRecord | null) =>
  u && {
    upload_id: u.id,
    task_id: u.taskId,
    filename: u.filename,
    ...uploadCounts(u),
    status: u.status,
    created_at: u.createdAt.toISOString(),
    updated_at: u.updatedAt.toISOString(),
  };

const toTaskCore = (t: TaskRecord) => ({
  id: t.id,
  user_id: t.userId,
  webhook_url: t.webhookUrl,
  source: t.source,
  created_at: t.createdAt.toISOString(),
});

const toTaskSummary = (v: TaskView) => ({
  ...toTaskCore(v.task),
  updated_at: v.task.updatedAt.toISOString(),
  is_file_backed: v.task.isFileBacked,
  file: toFileReply(v.upload),
  metrics: toMetricsReply(v.metrics),
});

export const toTaskDetail = (v: TaskView) => ({
  ...toTaskSummary(v),
  started_at: iso(v.task.startedAt),
  finished_at: iso(v.task.finishedAt),
  cancelled_at: iso(v.task.cancelledAt),
  retry_window_minutes: v.task.retryWindowMinutes,
});

export const toJobReply = ({ job, result }: JobView) => ({
  id: job.id,
  task_id: job.taskId,
  email_address: job.emailAddress,
  status: job.status,
  attempts: job.attempts,
  unknown_reason:
    job.status === "pending" && job.attempts > 0 && isUnknownReason(job.lastError) ? job.lastError : null,
  next_attempt_at: job.status === "pending" ? job.runAfter.toISOString() : null,
  ...(result ? { email: toVerificationReply(result) } : {}),
  created_at: job.createdAt.toISOString(),
  updated_at: job.updatedAt.toISOString(),
});

export const toCreatedTaskReply = (t: TaskRecord) => ({
  ...toTaskCore(t),
  // The spec: "email_count | Creation response only: emails submitted". The task row's
  // email_count column is the distinct count (jobs, billing); unique_count carries it here.
  email_count: t.submittedCount,
  submitted_count: t.submittedCount,
  unique_count: t.emailCount,
  domain_count: t.domainCount,
});

export const toListTasksReply = (page: TaskPage, limit: number, offset: number) => ({
  tasks: page.tasks.map(toTaskSummary),
  ...(page.source ? { source: page.source } : {}),
  count: page.total,
  limit,
  offset,
});

/** One point per UTC day of the range; a day without rows reports zeros. */
export const toSeriesReply = (
  task: TaskRecord,
  days: string[],
  points: Array<{ date: string; metrics: TaskMetrics }>,
) => {
  const byDay = new Map(points.map((p) => [p.date, p.metrics]));
  return {
    task_id: task.id,
    source: task.source,
    series: days.map((date) => ({ date, ...toMetricsReply(byDay.get(date) ?? emptyMetrics()) })),
  };
};

/** `webhook_url` of a task: absolute http(s), and not a literal private address unless allowed. */
export function checkWebhookUrl(url: string | undefined, allowPrivate: boolean): string | null {
  if (url === undefined) return null;
  const problem = webhookUrlProblem(url.trim(), allowPrivate);
  if (problem) throw validationError("Invalid webhook_url", [{ field: "webhook_url", reason: problem }]);
  return url.trim();
}
