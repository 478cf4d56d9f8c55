import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { validationError, type FieldError } from "../../lib/app-error.ts";
import { lastDays, parseDateRange, parseRfc3339, utcDaysOf } from "../../reports/date-range.ts";
import type { HttpDeps } from "../deps.ts";
import { idempotencyKeyOf } from "../idempotency-key.ts";
import { principalOf } from "../plugins/auth.ts";
import { createdOrRefused } from "../task-denials.ts";
import { errorResponses, IdParams, NoQuery, ref } from "../schemas/common.ts";
import { CreateQuery, dryRunMoved, TaskQuoteReply, toTaskQuoteReply } from "../schemas/quote.ts";
import { documentRequest, TAG } from "../schemas/openapi.ts";
import {
  checkWebhookUrl,
  CreatedTaskReply,
  CreateTaskBody,
  CreateTaskBodyDocumented,
  IdempotencyHeaders,
  JobsQuery,
  JobsReply,
  ListTasksQuery,
  ListTasksQueryDocumented,
  ListTasksReply,
  SeriesQuery,
  SeriesQueryDocumented,
  SeriesReply,
  TaskDetail,
  toCreatedTaskReply,
  toJobReply,
  toListTasksReply,
  toSeriesReply,
  toTaskDetail,
} from "../schemas/tasks.ts";

const SERIES_DEFAULT_DAYS = 7;
function readTimestamp(field: string, value: string | undefined, errors: FieldError[]): Date | undefined {
  if (value === undefined) return undefined;
  const parsed = parseRfc3339(value);
  if (!parsed) errors.push({ field, reason: "must be an RFC 3339 date-time with an offset" });
  return parsed ?? undefined;
}

export const taskRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  const { tasks, settings } = deps;

  app.post(
    "/api/v1/tasks",
    {
      schema: {
        operationId: "createTask",
        summary: "Create a batch task",
        description:
          "Queues up to 10,000 addresses for asynchronous verification and reserves one credit per distinct address; credits of `unknown` results are refunded when the task finishes. With `webhook_url` the task-completion webhook is sent. A repeated `Idempotency-Key` returns the task the first request created. The price of the same body, without creating anything, is `POST /api/v1/tasks/quote`; a `dry_run` parameter here is a 400 naming it.",
        tags: [TAG.tasks],
        querystring: CreateQuery,
        body: CreateTaskBody,
        response: {
          201: ref(CreatedTaskReply, "The task, queued"),
          ...errorResponses(400, 401, 402, 404, 409, 429, 500),
        },
      },
      // The handler reads Idempotency-Key itself (its own 400 wording), so only the document has it.
      config: {
        swaggerTransform: documentRequest({
          headers: IdempotencyHeaders,
          body: CreateTaskBodyDocumented,
          querystring: NoQuery,
        }),
      },
    },
    async (req, reply) => {
      if (req.query.dry_run !== undefined) throw dryRunMoved("task");
      const webhookUrl = checkWebhookUrl(req.body.webhook_url, settings.allowPrivateWebhooks);
      const created = await tasks.create(principalOf(req), {
        emails: req.body.emails,
        webhookUrl,
        retryWindowMinutes: req.body.retry_window_minutes ?? settings.taskRetryWindowMinutes,
        idempotencyKey: idempotencyKeyOf(req.headers["idempotency-key"]),
      });
      const { task } = createdOrRefused(created);
      return reply.status(201).send(toCreatedTaskReply(task));
    },
  );

  app.post(
    "/api/v1/tasks/quote",
    {
      schema: {
        operationId: "quoteTask",
        summary: "Price a batch task",
        description:
          "What `POST /api/v1/tasks` would do with the same body: the counts, the credits it would reserve and the balance. The body is validated as the real call validates it (the same 400s) and nothing is created: no task, jobs, reservation or Idempotency-Key record. Too little credit is not an error here (`has_enough_credits: false`); the real call would answer 402. An `Idempotency-Key` header is checked as the real call checks it but neither recorded nor replayed, so the same headers can go to both. Rate-limited like any request.",
        tags: [TAG.tasks],
        querystring: NoQuery,
        body: CreateTaskBody,
        response: {
          200: ref(TaskQuoteReply, "What the task would count and cost"),
          ...errorResponses(400, 401, 404, 429, 500),
        },
      },
      config: { swaggerTransform: documentRequest({ body: CreateTaskBodyDocumented }) },
    },
    async (req) => {
      // The real call's checks, in its order, so a body it refuses is refused here alike.
      checkWebhookUrl(req.body.webhook_url, settings.allowPrivateWebhooks);
      idempotencyKeyOf(req.headers["idempotency-key"]);
      return toTaskQuoteReply(await tasks.quote(principalOf(req), req.body.emails));
    },
  );

  app.get(
    "/api/v1/tasks",
    {
      schema: {
        operationId: "listTasks",
        summary: "List batch tasks",
        description: "The caller's tasks, newest first, with their metrics.",
        tags: [TAG.tasks],
        querystring: ListTasksQuery,
        response: { 200: ref(ListTasksReply, "A page of tasks"), ...errorResponses(400, 401, 429, 500) },
      },
      config: { swaggerTransform: documentRequest({ querystring: ListTasksQueryDocumented }) },
    },
    async (req) => {
      const q = req.query;
      const errors: FieldError[] = [];
      const createdAfter = readTimestamp("created_after", q.created_after, errors);
      const createdBefore = readTimestamp("created_before", q.created_before, errors);
      if (errors.length > 0) throw validationError("Invalid query", errors);
      const page = await tasks.list(principalOf(req), {
        limit: q.limit,
        offset: q.offset,
        isFileBacked: q.is_file_backed,
        createdAfter,
        createdBefore,
      });
      return toListTasksReply(page, q.limit, q.offset);
    },
  );

  app.get(
    "/api/v1/tasks/:id",
    {
      schema: {
        operationId: "getTask",
        summary: "Get a batch task",
        description:
          "The task with its lifecycle times, its upload (if any) and its metrics. Another user's task is a 404.",
        tags: [TAG.tasks],
        params: IdParams,
        querystring: NoQuery,
        response: { 200: ref(TaskDetail, "The task"), ...errorResponses(400, 401, 404, 429, 500) },
      },
    },
    async (req) => toTaskDetail(await tasks.get(principalOf(req), req.params.id)),
  );

  app.get(
    "/api/v1/tasks/:id/series",
    {
      schema: {
        operationId: "getTaskSeries",
        summary: "Daily metrics of a batch task",
        description:
          "One metrics point per UTC day of [from, to): the last 7 days when both are omitted; give both or neither; at most 90 days.",
        tags: [TAG.tasks],
        params: IdParams,
        querystring: SeriesQuery,
        response: {
          200: ref(SeriesReply, "The daily series"),
          ...errorResponses(400, 401, 403, 404, 429, 500),
        },
      },
      config: { swaggerTransform: documentRequest({ querystring: SeriesQueryDocumented }) },
    },
    async (req) => {
      const parsed = parseDateRange(req.query, { required: false });
      if (!parsed.ok) throw validationError("Invalid date range", parsed.errors);
      const range = parsed.range ?? lastDays(SERIES_DEFAULT_DAYS, deps.clock.now());
      const { task, points } = await tasks.series(principalOf(req), req.params.id, range);
      return toSeriesReply(task, utcDaysOf(range), points);
    },
  );

  app.get(
    "/api/v1/tasks/:id/jobs",
    {
      schema: {
        operationId: "listTaskJobs",
        summary: "List the jobs of a batch task",
        description:
          "One job per distinct address, newest first, with its result once verified and its retry state while pending.",
        tags: [TAG.tasks],
        params: IdParams,
        querystring: JobsQuery,
        response: { 200: ref(JobsReply, "A page of jobs"), ...errorResponses(400, 401, 404, 429, 500) },
      },
    },
    async (req) => {
      const { limit, offset, status, q } = req.query;
      const page = await tasks.jobs(principalOf(req), req.params.id, {
        limit,
        offset,
        status: status ?? null,
        search: q ?? null,
      });
      return { jobs: page.jobs.map(toJobReply), count: page.total, limit, offset };
    },
  );

  app.post(
    "/api/v1/tasks/:id/cancel",
    {
      schema: {
        operationId: "cancelTask",
        summary: "Cancel a batch task",
        description:
          "Drops the task's pending jobs and finishes it at once: address groups already being verified finish and are billed, everything else reserved is refunded in one `task_cancelled_refund` transaction, the upload becomes `cancelled` and the completion webhook is sent once with `status: cancelled`. A finished (or already cancelled) task is a 409; another user's task is a 404.",
        tags: [TAG.tasks],
        params: IdParams,
        querystring: NoQuery,
        response: {
          200: ref(TaskDetail, "The cancelled task"),
          ...errorResponses(400, 401, 404, 409, 429, 500),
        },
      },
    },
    async (req) => toTaskDetail(await tasks.cancel(principalOf(req), req.params.id)),
  );

  app.post(
    "/api/v1/tasks/:id/finish",
    {
      schema: {
        operationId: "finishTask",
        summary: "Finish a batch task now",
        description:
          "Stops waiting for retries: every pending job ends with an `unknown` result (the reason it was waiting on, e.g. `greylisted`), refunded as unknown results are, and the task completes normally (`completed`, the completion webhook sent once). Address groups being verified at that moment are recorded as usual (a retry they would ask for is settled as unknown instead) and the task completes when the last is recorded, within seconds. Finishing a finished task returns it unchanged; a cancelled task is a 409; another user's task is a 404.",
        tags: [TAG.tasks],
        params: IdParams,
        querystring: NoQuery,
        response: {
          200: ref(TaskDetail, "The task, finished (or finishing while groups being verified are recorded)"),
          ...errorResponses(400, 401, 404, 409, 429, 500),
        },
      },
    },
    async (req) => toTaskDetail(await tasks.finish(principalOf(req), req.params.id)),
  );

  app.delete(
    "/api/v1/tasks/:id",
    {
      schema: {
        operationId: "deleteTask",
        summary: "Delete a batch task",
        description:
          "Removes a finished task with its jobs, results and uploaded file; credit transactions are kept. An unfinished task is a 409 (cancel it first); another user's task is a 404; integration keys (zapier, n8n, google sheets) get a 403.",
        tags: [TAG.tasks],
        params: IdParams,
        querystring: NoQuery,
        response: {
          204: Type.Null({ description: "Deleted" }),
          ...errorResponses(400, 401, 403, 404, 409, 429, 500),
        },
      },
    },
    async (req, reply) => {
      await tasks.delete(principalOf(req), req.params.id);
      return reply.status(204).send(null);
    },
  );
};
