import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { validationError, type FieldError } from "../../lib/app-error.ts";
import { parseDateRange, parseRfc3339, utcDaysOf } from "../../reports/date-range.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses, IdParams } from "../schemas/common.ts";
import {
  checkWebhookUrl,
  CreatedTaskReply,
  CreateTaskBody,
  JobsQuery,
  JobsReply,
  ListTasksQuery,
  ListTasksReply,
  SeriesQuery,
  SeriesReply,
  TaskDetail,
  toCreatedTaskReply,
  toJobReply,
  toListTasksReply,
  toSeriesReply,
  toTaskDetail,
} from "../schemas/tasks.ts";

const SERIES_DEFAULT_DAYS = 7;
const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** Reads the optional Idempotency-Key header (Stripe's convention). */
function idempotencyKeyOf(header: string | string[] | undefined): string | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return null;
  const key = value.trim();
  if (key === "" || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw validationError("Invalid Idempotency-Key header", [
      { field: "Idempotency-Key", reason: `must be 1-${MAX_IDEMPOTENCY_KEY_LENGTH} characters` },
    ]);
  }
  return key;
}

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
        tags: ["tasks"],
        body: CreateTaskBody,
        response: { 201: CreatedTaskReply, ...errorResponses(400, 401, 402, 429, 500) },
      },
    },
    async (req, reply) => {
      const webhookUrl = checkWebhookUrl(req.body.webhook_url, settings.allowPrivateWebhooks);
      const idempotencyKey = idempotencyKeyOf(req.headers["idempotency-key"]);
      const { task } = await tasks.create(principalOf(req), {
        emails: req.body.emails,
        webhookUrl,
        idempotencyKey,
      });
      return reply.status(201).send(toCreatedTaskReply(task));
    },
  );

  app.get(
    "/api/v1/tasks",
    {
      schema: {
        tags: ["tasks"],
        querystring: ListTasksQuery,
        response: { 200: ListTasksReply, ...errorResponses(400, 401, 429, 500) },
      },
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
        tags: ["tasks"],
        params: IdParams,
        response: { 200: TaskDetail, ...errorResponses(400, 401, 404, 429, 500) },
      },
    },
    async (req) => toTaskDetail(await tasks.get(principalOf(req), req.params.id)),
  );

  app.get(
    "/api/v1/tasks/:id/series",
    {
      schema: {
        tags: ["tasks"],
        params: IdParams,
        querystring: SeriesQuery,
        response: { 200: SeriesReply, ...errorResponses(400, 401, 403, 404, 429, 500) },
      },
    },
    async (req) => {
      const parsed = parseDateRange(req.query, { required: false });
      if (!parsed.ok) throw validationError("Invalid date range", parsed.errors);
      const now = deps.clock.now();
      const range = parsed.range ?? {
        from: new Date(now.getTime() - SERIES_DEFAULT_DAYS * 86_400_000),
        to: now,
      };
      const { task, points } = await tasks.series(principalOf(req), req.params.id, range);
      return toSeriesReply(task, utcDaysOf(range), points);
    },
  );

  app.get(
    "/api/v1/tasks/:id/jobs",
    {
      schema: {
        tags: ["tasks"],
        params: IdParams,
        querystring: JobsQuery,
        response: { 200: JobsReply, ...errorResponses(400, 401, 404, 429, 500) },
      },
    },
    async (req) => {
      const { limit, offset } = req.query;
      const page = await tasks.jobs(principalOf(req), req.params.id, { limit, offset });
      return { jobs: page.jobs.map(toJobReply), count: page.total, limit, offset };
    },
  );
};
