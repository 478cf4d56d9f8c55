import type { Queryable } from "../client.ts";

export interface TaskRecord {
  id: string;
  userId: string | null;
  webhookUrl: string | null;
  source: "frontend" | "api_key";
  apiKeyId: string | null;
  /** Distinct canonical addresses queued: the jobs, and the credits reserved. */
  emailCount: number;
  /** Entries submitted, duplicates included (older tasks: = emailCount). */
  submittedCount: number;
  domainCount: number;
  isFileBacked: boolean;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Set when the task was cancelled (finishedAt is then the same moment). */
  cancelledAt: Date | null;
  /** Minutes after its start during which deferred addresses are retried; null: no limit (older tasks). */
  retryWindowMinutes: number | null;
  /** No retry is scheduled after this (the window's end, or the moment of a finish); null until started. */
  retriesEndAt: Date | null;
}

interface TaskRow {
  id: string;
  user_id: string | null;
  webhook_url: string | null;
  source: "frontend" | "api_key";
  api_key_id: string | null;
  email_count: number;
  submitted_count: number | null;
  domain_count: number;
  is_file_backed: boolean;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  cancelled_at: Date | null;
  retry_window_minutes: number | null;
  retries_end_at: Date | null;
}

const toTask = (r: TaskRow): TaskRecord => ({
  id: r.id,
  userId: r.user_id,
  webhookUrl: r.webhook_url,
  source: r.source,
  apiKeyId: r.api_key_id,
  emailCount: r.email_count,
  submittedCount: r.submitted_count ?? r.email_count,
  domainCount: r.domain_count,
  isFileBacked: r.is_file_backed,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  cancelledAt: r.cancelled_at,
  retryWindowMinutes: r.retry_window_minutes,
  retriesEndAt: r.retries_end_at,
});

export async function insertTask(
  q: Queryable,
  t: Omit<TaskRecord, "updatedAt" | "startedAt" | "finishedAt" | "cancelledAt" | "retriesEndAt">,
): Promise<TaskRecord> {
  const { rows } = await q.query<TaskRow>(
    `insert into tasks (id, user_id, webhook_url, source, api_key_id, email_count, domain_count, is_file_backed, created_at, updated_at, submitted_count, retry_window_minutes)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11) returning *`,
    [
      t.id,
      t.userId,
      t.webhookUrl,
      t.source,
      t.apiKeyId,
      t.emailCount,
      t.domainCount,
      t.isFileBacked,
      t.createdAt,
      t.submittedCount,
      t.retryWindowMinutes,
    ],
  );
  return toTask(rows[0]!);
}

export async function findTask(q: Queryable, id: string): Promise<TaskRecord | null> {
  const { rows } = await q.query<TaskRow>("select * from tasks where id = $1", [id]);
  return rows[0] ? toTask(rows[0]) : null;
}

/** Serialises the finishing of one task: whoever holds it sees every other recorder's committed jobs. */
export async function lockTask(q: Queryable, id: string): Promise<TaskRecord | null> {
  const { rows } = await q.query<TaskRow>("select * from tasks where id = $1 for update", [id]);
  return rows[0] ? toTask(rows[0]) : null;
}

/**
 * The tasks, share-locked in id order: a result write reads them stable (a cancel or a finish now
 * waits for it) while other writes of the same tasks go on beside it.
 */
export async function shareLockTasks(q: Queryable, ids: readonly string[]): Promise<TaskRecord[]> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<TaskRow>(
    "select * from tasks where id = any($1::uuid[]) order by id for share",
    [ids],
  );
  return rows.map(toTask);
}

/**
 * Owners of the cancelled tasks among `taskIds`: the users whose balance a result write moves
 * (the late charge). Read before the write's locks, checked again under them.
 */
export async function findOwnersOfCancelledTasks(
  q: Queryable,
  taskIds: readonly string[],
): Promise<string[]> {
  if (taskIds.length === 0) return [];
  const { rows } = await q.query<{ user_id: string }>(
    `select distinct user_id from tasks
      where id = any($1::uuid[]) and cancelled_at is not null and user_id is not null
      order by user_id`,
    [taskIds],
  );
  return rows.map((r) => r.user_id);
}

/**
 * Unfinished tasks none of whose jobs is open: what a result write that died between its commit
 * and the task's finish leaves behind (tasks/record-group.ts). Oldest first, at most `limit`.
 */
export async function findTasksLeftUnfinished(q: Queryable, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    `select t.id from tasks t
      where t.finished_at is null
        and not exists (select 1 from email_jobs j
                         where j.task_id = t.id and j.status in ('pending', 'processing'))
      order by t.created_at, t.id
      limit $1`,
    [limit],
  );
  return rows.map((r) => r.id);
}

export interface TaskFilter {
  userId: string;
  isFileBacked?: boolean;
  createdAfter?: Date;
  createdBefore?: Date;
  limit: number;
  offset: number;
}

/** One page of the user's tasks, newest first, plus the number of tasks matching the filter. */
export async function listTasks(
  q: Queryable,
  f: TaskFilter,
): Promise<{ tasks: TaskRecord[]; total: number; sources: string[] }> {
  const where = `user_id = $1
     and ($2::boolean is null or is_file_backed = $2)
     and ($3::timestamptz is null or created_at > $3)
     and ($4::timestamptz is null or created_at < $4)`;
  const params = [f.userId, f.isFileBacked ?? null, f.createdAfter ?? null, f.createdBefore ?? null];
  const [page, summary] = await Promise.all([
    q.query<TaskRow>(
      `select * from tasks where ${where} order by created_at desc, id desc limit $5 offset $6`,
      [...params, f.limit, f.offset],
    ),
    q.query<{ total: number; sources: string[] | null }>(
      `select count(*) as total, array_agg(distinct source) as sources from tasks where ${where}`,
      params,
    ),
  ]);
  return {
    tasks: page.rows.map(toTask),
    total: summary.rows[0]?.total ?? 0,
    sources: summary.rows[0]?.sources ?? [],
  };
}

/**
 * started_at = the first claim of any of the task's jobs, and the retry window runs from then.
 * Only tasks not started yet are locked, in id order, so two claims sharing tasks wait for each
 * other in one order.
 */
export async function markTasksStarted(q: Queryable, taskIds: string[], at: Date): Promise<void> {
  await q.query(
    `update tasks set started_at = $2, updated_at = $2,
            retries_end_at = least(retries_end_at, $2::timestamptz + retry_window_minutes * interval '1 minute')
      where id in (select id from tasks where id = any($1::uuid[]) and started_at is null
                    order by id for no key update)
        and started_at is null`,
    [taskIds, at],
  );
}

/** Sets finished_at once; returns false when another recorder already finished the task. */
export async function markTaskFinished(q: Queryable, id: string, at: Date): Promise<boolean> {
  const { rowCount } = await q.query(
    "update tasks set finished_at = $2, updated_at = $2 where id = $1 and finished_at is null",
    [id, at],
  );
  return rowCount > 0;
}

/**
 * A finish now: no retry of the task is scheduled after `at` any more (an earlier window end
 * stands). Returns the task as updated.
 */
export async function endTaskRetries(q: Queryable, id: string, at: Date): Promise<TaskRecord> {
  const { rows } = await q.query<TaskRow>(
    `update tasks set retries_end_at = least(retries_end_at, $2), updated_at = $2
      where id = $1 returning *`,
    [id, at],
  );
  return toTask(rows[0]!);
}

/** Cancels an unfinished task: finished and cancelled at `at`; false when it had already finished. */
export async function markTaskCancelled(q: Queryable, id: string, at: Date): Promise<boolean> {
  const { rowCount } = await q.query(
    "update tasks set finished_at = $2, cancelled_at = $2, updated_at = $2 where id = $1 and finished_at is null",
    [id, at],
  );
  return rowCount > 0;
}

/**
 * Removes a finished task and everything made from it except money history: its jobs, results,
 * upload (the stored rows of the file) and idempotency keys. Webhook deliveries are kept, detached
 * (a delivery still due is still sent once). The caller holds the task's row lock (lockTask) and
 * has checked that it finished: a running group's recorder waits on that lock and then finds
 * nothing to record. Returns false when the task was not there.
 */
export async function deleteTaskData(q: Queryable, id: string): Promise<boolean> {
  await q.query("delete from email_jobs where task_id = $1", [id]);
  await q.query("delete from email_verifications where task_id = $1", [id]);
  await q.query(
    "delete from upload_row_blocks where upload_id in (select id from uploads where task_id = $1)",
    [id],
  );
  await q.query(
    "delete from upload_workbooks where upload_id in (select id from uploads where task_id = $1)",
    [id],
  );
  await q.query("delete from uploads where task_id = $1", [id]);
  // The key stays, pointing nowhere, so that a retry is refused rather than billed again (0022).
  await q.query("update idempotency_keys set task_id = null where task_id = $1", [id]);
  await q.query("update webhook_deliveries set task_id = null where task_id = $1", [id]);
  const { rowCount } = await q.query("delete from tasks where id = $1 and finished_at is not null", [id]);
  return rowCount > 0;
}

/** Finished tasks older than `before`, oldest first: what RESULT_RETENTION_DAYS purges next. */
export async function findTasksFinishedBefore(q: Queryable, before: Date, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    "select id from tasks where finished_at is not null and finished_at < $1 order by finished_at limit $2",
    [before, limit],
  );
  return rows.map((r) => r.id);
}

export async function findIdempotentTask(
  q: Queryable,
  userId: string,
  scope: string,
  key: string,
  since: Date,
): Promise<{ taskId: string | null; requestHash: string } | null> {
  const { rows } = await q.query<{ task_id: string | null; request_hash: string }>(
    "select task_id, request_hash from idempotency_keys where user_id = $1 and scope = $2 and key = $3 and created_at > $4",
    [userId, scope, key, since],
  );
  return rows[0] ? { taskId: rows[0].task_id, requestHash: rows[0].request_hash } : null;
}

/** Records the key; an expired row with the same key is replaced. */
export async function saveIdempotencyKey(
  q: Queryable,
  k: { userId: string; scope: string; key: string; requestHash: string; taskId: string; at: Date },
): Promise<void> {
  await q.query(
    `insert into idempotency_keys (user_id, scope, key, request_hash, task_id, created_at)
     values ($1, $2, $3, $4, $5, $6)
     on conflict (user_id, scope, key) do update
       set request_hash = excluded.request_hash, task_id = excluded.task_id, created_at = excluded.created_at`,
    [k.userId, k.scope, k.key, k.requestHash, k.taskId, k.at],
  );
}

/**
 * The user's unfinished tasks, locked, in id order (docs/locking.md: several tasks in id order):
 * all of them, or only those created with one of `apiKeyIds`.
 */
export async function lockUnfinishedTasksOf(
  q: Queryable,
  userId: string,
  apiKeyIds: readonly string[] | null,
): Promise<TaskRecord[]> {
  const { rows } = await q.query<TaskRow>(
    `select * from tasks
      where user_id = $1 and finished_at is null and ($2::uuid[] is null or api_key_id = any($2::uuid[]))
      order by id for update`,
    [userId, apiKeyIds],
  );
  return rows.map(toTask);
}
