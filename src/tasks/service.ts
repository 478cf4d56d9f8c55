import type { Principal } from "../auth/principal.ts";
import type { InvalidationBus } from "../db/invalidation-bus.ts";
import type { Database } from "../db/client.ts";
import { listJobsOfTask, type JobRecord } from "../db/queries/jobs.ts";
import {
  dailyMetricsOfTask,
  metricsOfTasks,
  toTaskMetrics,
  type TaskMetrics,
} from "../db/queries/task-metrics.ts";
import { findTask, listTasks, type TaskRecord } from "../db/queries/tasks.ts";
import { findUploadsOfTasks, type UploadRecord } from "../db/queries/uploads.ts";
import { findVerificationsByIds, type VerificationRecord } from "../db/queries/verifications.ts";
import { AppError, notFound } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import type { Engine } from "../verify/index.ts";
import type { TaskCreditsShort } from "./billing.ts";
import { cancelTask } from "./cancel-task.ts";
import { deleteTask } from "./delete-task.ts";
import {
  createTask,
  quoteTask,
  type CreateTaskInput,
  type CreatedTask,
  type TaskQuote,
} from "./create-task.ts";
import {
  prepareDownload as prepareTaskDownload,
  type Download,
  type DownloadOptions,
} from "./export-task.ts";
import { finishTaskNow } from "./finish-now.ts";
import { pacedOfTasks } from "./paced-metrics.ts";
import { checkTaskEmails } from "./task-input.ts";

export type { Download, DownloadOptions, TaskMetrics, TaskQuote, TaskRecord };

export interface TaskView {
  task: TaskRecord;
  metrics: TaskMetrics;
  upload: UploadRecord | null;
}

export interface TaskPage {
  tasks: TaskView[];
  total: number;
  /** The one origin every matching task shares, when they all share one. */
  source: "frontend" | "api_key" | null;
}

export interface JobView {
  job: JobRecord;
  result: VerificationRecord | null;
}

export interface TasksService {
  /** The task, or the denial when the balance cannot pay for it (nothing is written then). */
  create(
    principal: Principal,
    input: Omit<CreateTaskInput, "emails"> & { emails: string[] },
  ): Promise<CreatedTask | TaskCreditsShort>;
  /** A dry run of `create`: the same checks and counts, the price and the balance; creates nothing. */
  quote(principal: Principal, emails: string[]): Promise<TaskQuote>;
  list(
    principal: Principal,
    filter: {
      limit: number;
      offset: number;
      isFileBacked?: boolean;
      createdAfter?: Date;
      createdBefore?: Date;
    },
  ): Promise<TaskPage>;
  get(principal: Principal, id: string): Promise<TaskView>;
  series(
    principal: Principal,
    id: string,
    range: { from: Date; to: Date },
  ): Promise<{ task: TaskRecord; points: Array<{ date: string; metrics: TaskMetrics }> }>;
  jobs(
    principal: Principal,
    id: string,
    page: { limit: number; offset: number; status?: string | null; search?: string | null },
  ): Promise<{ jobs: JobView[]; total: number }>;
  /** The results file of one of the caller's tasks, streamed; FORBIDDEN for another user's task. */
  prepareDownload(principal: Principal, id: string, opts: DownloadOptions): Promise<Download>;
  /** Cancels an unfinished task (cancel-task.ts); CONFLICT once it has finished. Returns it as `get` does. */
  cancel(principal: Principal, id: string): Promise<TaskView>;
  /**
   * Stops waiting for retries (finish-now.ts): pending jobs end unknown and the task completes,
   * at once or when the groups running now are recorded. Idempotent; CONFLICT once cancelled.
   */
  finish(principal: Principal, id: string): Promise<TaskView>;
  /** Deletes a finished task's jobs, results and upload (cancel-task.ts); CONFLICT while it runs. */
  delete(principal: Principal, id: string): Promise<void>;
}

export function createTasksService(
  db: Database,
  clock: Clock,
  engine: Pick<Engine, "checkSyntax">,
  bus?: Pick<InvalidationBus, "applyLocally">,
): TasksService {
  /** Another user's task is "not found" on get/jobs: its existence is not revealed (DESIGN §5). */
  async function ownTask(principal: Principal, id: string): Promise<TaskRecord> {
    const task = await findTask(db, id);
    if (!task || task.userId !== principal.userId) throw notFound("Task");
    return task;
  }

  async function viewOf(task: TaskRecord): Promise<TaskView> {
    const [metrics, uploads] = await Promise.all([
      metricsWithPaces([task]),
      findUploadsOfTasks(db, [task.id]),
    ]);
    return { task, metrics: metrics.get(task.id) ?? emptyMetrics(), upload: uploads.get(task.id) ?? null };
  }

  /** The tasks' metrics, with the providers pacing the unfinished ones. */
  async function metricsWithPaces(tasks: readonly TaskRecord[]): Promise<Map<string, TaskMetrics>> {
    const running = tasks.filter((t) => t.finishedAt === null).map((t) => t.id);
    const [metrics, paced] = await Promise.all([
      metricsOfTasks(
        db,
        tasks.map((t) => t.id),
      ),
      pacedOfTasks(db, running, clock.now()),
    ]);
    for (const [id, list] of paced) {
      const m = metrics.get(id);
      if (m !== undefined) m.paced = list;
    }
    return metrics;
  }

  return {
    async create(principal, input) {
      return createTask(db, clock, engine, principal, { ...input, emails: checkTaskEmails(input.emails) });
    },

    quote: (principal, emails) => quoteTask(db, engine, principal, checkTaskEmails(emails)),

    async list(principal, f) {
      const page = await listTasks(db, { userId: principal.userId, ...f });
      const ids = page.tasks.map((t) => t.id);
      const [metrics, uploads] = await Promise.all([
        metricsWithPaces(page.tasks),
        findUploadsOfTasks(db, ids),
      ]);
      return {
        tasks: page.tasks.map((task) => ({
          task,
          metrics: metrics.get(task.id) ?? emptyMetrics(),
          upload: uploads.get(task.id) ?? null,
        })),
        total: page.total,
        source: page.sources.length === 1 ? (page.sources[0] as "frontend" | "api_key") : null,
      };
    },

    async get(principal, id) {
      // The stored (lowercase) id, not the URL's spelling: the lookups below compare exactly.
      return viewOf(await ownTask(principal, id));
    },

    async series(principal, id, range) {
      const task = await findTask(db, id);
      if (!task) throw notFound("Task");
      // The spec answers 403 here (series, download, upload status) for another user's task.
      if (task.userId !== principal.userId)
        throw new AppError("FORBIDDEN", "This task belongs to another user");
      const points = await dailyMetricsOfTask(db, id, range.from, range.to);
      return { task, points };
    },

    async jobs(principal, id, page) {
      await ownTask(principal, id);
      const { jobs, total } = await listJobsOfTask(
        db,
        id,
        page.limit,
        page.offset,
        page.status ?? null,
        page.search ?? null,
      );
      const results = await findVerificationsByIds(
        db,
        jobs.flatMap((j) => (j.emailId ? [j.emailId] : [])),
      );
      return {
        jobs: jobs.map((job) => ({ job, result: job.emailId ? (results.get(job.emailId) ?? null) : null })),
        total,
      };
    },

    prepareDownload: (principal, id, opts) => prepareTaskDownload(db, principal, id, opts),

    async cancel(principal, id) {
      return viewOf(await cancelTask(db, clock, principal, id));
    },

    async finish(principal, id) {
      return viewOf(await finishTaskNow(db, clock, principal, id));
    },

    delete: (principal, id) => deleteTask(db, principal, id, bus),
  };
}

export const emptyMetrics = (): TaskMetrics => toTaskMetrics(undefined);
