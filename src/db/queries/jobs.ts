import { checksOfLegacyResult, isResultChecks, type VerificationResult } from "../../verify/index.ts";
import type { Queryable } from "../client.ts";

/** `cancelled`: the task was cancelled before the job ran (final, neither billed nor refunded at finish). */
export type JobStatus = "pending" | "processing" | "completed" | "failed" | "cancelled";

export interface JobRecord {
  id: string;
  taskId: string;
  userId: string | null;
  position: number;
  emailAddress: string;
  domain: string;
  status: JobStatus;
  /** Claims so far (a crash or an expired lease counts too): bounds internal failures. */
  attempts: number;
  /** Retries scheduled for a deferring answer (greylisting, 4xx): indexes VERIFY_RETRY_DELAYS. */
  deferredRetries: number;
  /** Retries scheduled for an unreachable host or failed DNS: indexes VERIFY_UNREACHABLE_RETRY_DELAYS. */
  unreachableRetries: number;
  runAfter: Date;
  /** CLAIM_LANE: where the job stands in claim order. */
  claimLane: number;
  /** Why the last attempt did not settle the job (an unknown reason for retries, an error for failures). */
  lastError: string | null;
  emailId: string | null;
  /** The unknown answer a pending job waits to retry after (null: none stored, e.g. never tried). */
  retryResult: VerificationResult | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface JobRow {
  id: string;
  task_id: string;
  user_id: string | null;
  position: number;
  email_address: string;
  domain: string;
  status: JobStatus;
  attempts: number;
  deferred_retries: number;
  unreachable_retries: number;
  run_after: Date;
  claim_lane: number;
  last_error: string | null;
  email_id: string | null;
  retry_result: (Omit<VerificationResult, "validatedAt"> & { validatedAt: string }) | null;
  created_at: Date;
  updated_at: Date;
}

export const toJob = (r: JobRow): JobRecord => ({
  id: r.id,
  taskId: r.task_id,
  userId: r.user_id,
  position: r.position,
  emailAddress: r.email_address,
  domain: r.domain,
  status: r.status,
  attempts: r.attempts,
  deferredRetries: r.deferred_retries,
  unreachableRetries: r.unreachable_retries,
  runAfter: r.run_after,
  claimLane: r.claim_lane,
  lastError: r.last_error,
  emailId: r.email_id,
  retryResult: r.retry_result
    ? {
        ...r.retry_result,
        validatedAt: new Date(r.retry_result.validatedAt),
        // Stored before results had checks (migration 0015): what its other fields prove.
        checks: isResultChecks(r.retry_result.checks)
          ? r.retry_result.checks
          : checksOfLegacyResult(r.retry_result),
      }
    : null,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface NewJob {
  id: string;
  position: number;
  emailAddress: string;
  domain: string;
  /** CLAIM_LANE.firstChunk or CLAIM_LANE.bulk, by the job's rank in its domain (claimLaneOf). */
  claimLane: number;
}

/**
 * Claim lanes (migration 0018), taken lowest first: a due step of a retry chain, then every
 * domain's first chunk, then the bulk. Retries waited behind a task's whole pass when the claim
 * went by run_after alone (a task's jobs are all created at one instant, before any retry).
 */
export const CLAIM_LANE = { retry: 0, firstChunk: 1, bulk: 2 } as const;

/**
 * A domain's first chunk in its task: the addresses its first session verifies before any
 * domain's bulk. One full group of RCPT writes under the default SMTP_MAX_RCPT (50), so a domain
 * of up to 50 addresses still needs one session and no more connections than before; a bigger
 * domain's first 50 run early and the rest waits its turn.
 */
export const CLAIM_FIRST_CHUNK = 50;

/**
 * The lane of a task's job that is the `rank`-th (from 0) of its domain in the task's order. The
 * caller ranks over the whole task: a task is inserted in several statements, so a window
 * function in the insert would rank within each statement's slice (and cost the embedded
 * database's thread a sort per slice).
 */
export const claimLaneOf = (rank: number): number =>
  rank < CLAIM_FIRST_CHUNK ? CLAIM_LANE.firstChunk : CLAIM_LANE.bulk;

/** NOTIFY channel of new jobs: an idle worker wakes to claim them (src/jobs/idle-wait.ts). */
export const JOBS_DUE_CHANNEL = "mailprobe_jobs_due";

/**
 * All jobs of a task in one statement (array parameters, not one round trip per job), announced
 * on JOBS_DUE_CHANNEL when the transaction commits (NOTIFY is transactional; one per transaction
 * however many inserts, as PostgreSQL folds equal notifications).
 */
export async function insertJobs(
  q: Queryable,
  taskId: string,
  userId: string,
  jobs: NewJob[],
  at: Date,
): Promise<void> {
  await q.query(
    `insert into email_jobs (id, task_id, user_id, position, email_address, domain, run_after, created_at, updated_at,
                             claim_lane)
     select j.id, $1, $2, j.position, j.email, j.domain, $3, $3, $3, j.lane
       from unnest($4::uuid[], $5::integer[], $6::text[], $7::text[], $8::smallint[])
              as j(id, position, email, domain, lane)`,
    [
      taskId,
      userId,
      at,
      jobs.map((j) => j.id),
      jobs.map((j) => j.position),
      jobs.map((j) => j.emailAddress),
      jobs.map((j) => j.domain),
      jobs.map((j) => j.claimLane),
    ],
  );
  await q.query("select pg_notify($1, '')", [JOBS_DUE_CHANNEL]);
}

/**
 * Heartbeat: keeps the leases of the jobs this worker is working on alive during long sessions.
 * Only the ids given: a job still locked by us but no longer in flight (its result could not be
 * recorded) must be left to expire, or it would stay `processing` for as long as we run. A job
 * whose result is being written right now (row-locked) is skipped, not waited for: the write
 * ends its lease anyway, and a heartbeat that waits holds the rows it already updated.
 */
export async function extendLeases(
  q: Queryable,
  worker: string,
  ids: string[],
  until: Date,
): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await q.query(
    `update email_jobs set locked_until = $2
      where id in (select id from email_jobs
                    where id = any($3::uuid[]) and locked_by = $1 and status = 'processing'
                    order by id for no key update skip locked)`,
    [worker, until, ids],
  );
  return rowCount;
}

/**
 * A crashed or killed worker's jobs return to pending once its lease has run out, or end
 * `cancelled` when their task was cancelled meanwhile: the claim reads open tasks only, so a
 * cancelled task's job put back to pending would stay there. A job being written right now is
 * skipped (its writer settles it; if not, the next sweep takes it).
 */
export async function releaseExpiredLeases(q: Queryable, now: Date): Promise<number> {
  const { rowCount } = await q.query(
    `update email_jobs j
        set status = ${PENDING_UNLESS_CANCELLED}, locked_by = null, locked_until = null, updated_at = $1
       from tasks t
      where t.id = j.task_id
        and j.id in (select id from email_jobs where status = 'processing' and locked_until < $1
                      order by id for no key update skip locked)`,
    [now],
  );
  return rowCount;
}

/** A job handed back goes to pending, or ends cancelled when its task (`t`) was cancelled. */
const PENDING_UNLESS_CANCELLED = "case when t.cancelled_at is null then 'pending' else 'cancelled' end";

/** The retry schedule a rescheduled job consumes a step of (null: none, e.g. a busy host). */
export type RetrySchedule = "deferred" | "unreachable";

export interface Reschedule {
  id: string;
  runAfter: Date;
  error: string | null;
  /** Undo the claim's attempt: no work was done (busy host, our own shutdown, a lost write). */
  refundAttempt: boolean;
  schedule: RetrySchedule | null;
  /** The unknown answer retried after; null keeps the one stored (a busy host, a shutdown). */
  result: VerificationResult | null;
}

/**
 * Puts jobs this worker holds back to pending (retry later), in one statement; those of a task
 * cancelled meanwhile end cancelled instead (see releaseExpiredLeases).
 */
export async function rescheduleJobs(
  q: Queryable,
  jobs: Reschedule[],
  worker: string,
  now: Date,
): Promise<number> {
  if (jobs.length === 0) return 0;
  const { rowCount } = await q.query(
    `update email_jobs j
        set status = ${PENDING_UNLESS_CANCELLED}, locked_by = null, locked_until = null, run_after = r.run_after,
            last_error = r.error, updated_at = $2, attempts = j.attempts - r.refund::int,
            deferred_retries = j.deferred_retries + (r.schedule is not distinct from 'deferred')::int,
            unreachable_retries = j.unreachable_retries + (r.schedule is not distinct from 'unreachable')::int,
            retry_result = coalesce(r.result, j.retry_result),
            -- A server's retry is a step of a chain: first in line once due. A job put back
            -- untried (busy host, shutdown, lost write) keeps its place.
            claim_lane = case when r.schedule is null then j.claim_lane else ${CLAIM_LANE.retry} end
       from unnest($1::uuid[], $4::timestamptz[], $5::text[], $6::boolean[], $7::text[], $8::jsonb[])
              as r(id, run_after, error, refund, schedule, result), tasks t
      where j.id = r.id and j.locked_by = $3 and j.status = 'processing' and t.id = j.task_id`,
    [
      jobs.map((j) => j.id),
      now,
      worker,
      jobs.map((j) => j.runAfter),
      jobs.map((j) => j.error),
      jobs.map((j) => j.refundAttempt),
      jobs.map((j) => j.schedule),
      jobs.map((j) => (j.result ? JSON.stringify(j.result) : null)),
    ],
  );
  return rowCount;
}

/**
 * A domain whose server just deferred a task's first addresses (greylisting) will defer the rest
 * too, and each address's retry chain starts at its own first attempt: the task's pending, untried
 * jobs of that domain move to the retry lane, due now, so their chains start with the first
 * ones' instead of when the pass reaches them. A job being claimed right now is skipped (its
 * claimer runs it). Returns how many moved.
 */
export async function advanceDeferringDomains(
  q: Queryable,
  domains: ReadonlyArray<{ taskId: string; domain: string }>,
  now: Date,
): Promise<number> {
  if (domains.length === 0) return 0;
  const { rowCount } = await q.query(
    `update email_jobs set claim_lane = ${CLAIM_LANE.retry}, run_after = least(run_after, $3), updated_at = $3
      where id in (select j.id from email_jobs j
                     join unnest($1::uuid[], $2::text[]) as d(task_id, domain)
                       on j.task_id = d.task_id and j.domain = d.domain
                    where j.status = 'pending' and j.claim_lane <> ${CLAIM_LANE.retry} and j.retry_result is null
                    order by j.id for no key update of j skip locked)`,
    [domains.map((d) => d.taskId), domains.map((d) => d.domain), now],
  );
  return rowCount;
}

/**
 * Up to `limit` domains after `after` (in name order) with a first chunk waiting in its first
 * place (never claimed): the domains whose mail host the pool learns ahead of their first
 * session. Paged by name so that a queue of many domains is covered in turn.
 */
export async function domainsAwaitingFirstSession(
  q: Queryable,
  now: Date,
  after: string,
  limit: number,
): Promise<string[]> {
  const { rows } = await q.query<{ domain: string }>(
    `select distinct domain from email_jobs
      where status = 'pending' and claim_lane = ${CLAIM_LANE.firstChunk} and run_after <= $1 and attempts = 0
        and domain > $2
      order by domain
      limit $3`,
    [now, after, limit],
  );
  return rows.map((r) => r.domain);
}

/**
 * When the first pending job falls due, or null when none is pending: an idle worker sleeps until
 * then rather than a whole poll interval. One index probe per lane (email_jobs_lane_claim_idx).
 */
export async function nextDueAt(q: Queryable): Promise<Date | null> {
  const { rows } = await q.query<{ due: Date | null }>(
    `select min(first) as due from (
       select (select run_after from email_jobs
                where status = 'pending' and claim_lane = lanes.lane
                order by run_after limit 1) as first
         from (values (${CLAIM_LANE.retry}), (${CLAIM_LANE.firstChunk}), (${CLAIM_LANE.bulk})) as lanes(lane)) firsts`,
  );
  return rows[0]?.due ?? null;
}

/** Marks jobs completed with their stored results; only jobs this worker still holds. */
export async function completeJobs(
  q: Queryable,
  done: Array<{ id: string; emailId: string }>,
  worker: string,
  now: Date,
): Promise<number> {
  if (done.length === 0) return 0;
  const { rowCount } = await q.query(
    `update email_jobs j
        set status = 'completed', email_id = d.email_id, locked_by = null, locked_until = null, updated_at = $3,
            last_error = null, retry_result = null
       from unnest($1::uuid[], $2::uuid[]) as d(id, email_id)
      where j.id = d.id and j.locked_by = $4 and j.status = 'processing'`,
    [done.map((d) => d.id), done.map((d) => d.emailId), now, worker],
  );
  return rowCount;
}

/** Ends jobs this worker holds as `failed`, each with its error, in one statement. */
export async function failJobs(
  q: Queryable,
  failures: ReadonlyArray<{ id: string; error: string }>,
  worker: string,
  now: Date,
): Promise<number> {
  if (failures.length === 0) return 0;
  const { rowCount } = await q.query(
    `update email_jobs j
        set status = 'failed', last_error = f.error, locked_by = null, locked_until = null, updated_at = $3
       from unnest($1::uuid[], $2::text[]) as f(id, error)
      where j.id = f.id and j.locked_by = $4 and j.status = 'processing'`,
    [failures.map((f) => f.id), failures.map((f) => f.error), now, worker],
  );
  return rowCount;
}

/**
 * Jobs this worker holds that are still processing, row-locked in id order (used to re-check
 * ownership before recording).
 */
export async function jobsHeldBy(q: Queryable, ids: string[], worker: string): Promise<Set<string>> {
  const { rows } = await q.query<{ id: string }>(
    `select id from email_jobs where id = any($1::uuid[]) and locked_by = $2 and status = 'processing'
      order by id for update`,
    [ids, worker],
  );
  return new Set(rows.map((r) => r.id));
}

/**
 * A cancel drops the task's pending jobs; running ones finish. Returns how many were dropped.
 * SKIP LOCKED: a job locked right now belongs to a claim in progress. Waiting for it would
 * deadlock, because the cancel holds the task's row and that claim's markTasksStarted wants it.
 * The claim drops such a job itself once the cancel has committed (dropJobsOfCancelledTasks).
 */
export async function cancelPendingJobs(
  q: Queryable,
  taskId: string,
  at: Date,
  /** At most this many, in id order (the global lock order); fewer means none is left. */
  limit: number,
): Promise<number> {
  const { rowCount } = await q.query(
    `update email_jobs set status = 'cancelled', updated_at = $2
      where id in (select id from email_jobs where task_id = $1 and status = 'pending'
                    order by id limit $3 for update skip locked)`,
    [taskId, at, limit],
  );
  return rowCount;
}

/**
 * Up to `limit` pending jobs of a task, row-locked in id order, for a finish to settle. SKIP
 * LOCKED for the reason cancelPendingJobs gives: a locked one belongs to a claim in progress, and
 * is settled when its group is recorded (its task's retries have ended).
 */
export async function lockPendingJobs(q: Queryable, taskId: string, limit: number): Promise<JobRecord[]> {
  const { rows } = await q.query<JobRow>(
    `select * from email_jobs where task_id = $1 and status = 'pending'
      order by id limit $2 for update skip locked`,
    [taskId, limit],
  );
  return rows.map(toJob);
}

/** Ends pending jobs (locked by the caller) with their stored results, in one statement. */
export async function settlePendingJobs(
  q: Queryable,
  done: ReadonlyArray<{ id: string; emailId: string }>,
  now: Date,
): Promise<number> {
  if (done.length === 0) return 0;
  const { rowCount } = await q.query(
    `update email_jobs j
        set status = 'completed', email_id = d.email_id, updated_at = $3, retry_result = null
       from unnest($1::uuid[], $2::uuid[]) as d(id, email_id)
      where j.id = d.id and j.status = 'pending'`,
    [done.map((d) => d.id), done.map((d) => d.emailId), now],
  );
  return rowCount;
}

/** Jobs this worker holds whose task was cancelled meanwhile: they end instead of going back to the queue. */
export async function cancelHeldJobs(
  q: Queryable,
  ids: string[],
  worker: string,
  now: Date,
): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await q.query(
    `update email_jobs set status = 'cancelled', locked_by = null, locked_until = null, updated_at = $2
      where id = any($1::uuid[]) and locked_by = $3 and status = 'processing'`,
    [ids, now, worker],
  );
  return rowCount;
}

/**
 * The claim's last guard: of the jobs just claimed, those of a cancelled task (a job put back to
 * pending by a lease sweep or a lost write after the cancel) are cancelled instead of run.
 * Returns their ids.
 */
export async function dropJobsOfCancelledTasks(q: Queryable, ids: string[], now: Date): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await q.query<{ id: string }>(
    `update email_jobs j set status = 'cancelled', locked_by = null, locked_until = null, updated_at = $2
       from tasks t
      where j.id = any($1::uuid[]) and t.id = j.task_id and t.cancelled_at is not null
     returning j.id`,
    [ids, now],
  );
  return new Set(rows.map((r) => r.id));
}

export async function countOpenJobs(q: Queryable, taskId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    "select count(*) as n from email_jobs where task_id = $1 and status in ('pending', 'processing')",
    [taskId],
  );
  return rows[0]?.n ?? 0;
}

/**
 * A page of a task's jobs, newest first (position breaks ties: one task's jobs share created_at).
 * `status`, when given, is a job status (pending, processing, completed, failed) or a result
 * status (valid, invalid, …): the two sets do not overlap, so one comparison with each serves.
 */
export async function listJobsOfTask(
  q: Queryable,
  taskId: string,
  limit: number,
  offset: number,
  status: string | null = null,
  search: string | null = null,
): Promise<{ jobs: JobRecord[]; total: number }> {
  // `search` is a case-insensitive substring of the address; strpos, not like, so % and _ in it
  // are plain characters.
  const filter = `from email_jobs j left join email_verifications v on v.id = j.email_id
     where j.task_id = $1 and ($2::text is null or j.status = $2 or v.status = $2)
       and ($3::text is null or strpos(lower(j.email_address), lower($3)) > 0)`;
  const [page, count] = await Promise.all([
    q.query<JobRow>(`select j.* ${filter} order by j.created_at desc, j.position desc limit $4 offset $5`, [
      taskId,
      status,
      search,
      limit,
      offset,
    ]),
    q.query<{ n: number }>(`select count(*) as n ${filter}`, [taskId, status, search]),
  ]);
  return { jobs: page.rows.map(toJob), total: count.rows[0]?.n ?? 0 };
}
