import type { Queryable } from "../client.ts";

// What the operator console shows of the queues, read from the rows the workers keep: there is no
// heartbeat table, a worker's heartbeat is its jobs' lease (extendLeases renews locked_until).

export interface JobQueueFigures {
  /** Pending jobs whose run_after has come: waiting for a worker. */
  due: number;
  /** Pending jobs scheduled later that were tried before (greylisting, unreachable host). */
  retryBacklog: number;
  /** When the earliest of those retries runs; null without any. */
  nextRetryAt: Date | null;
  /** Jobs a worker holds now. */
  processing: number;
  /** Of those, jobs whose lease ran out (their worker stopped renewing it). */
  expiredLeases: number;
}

export interface WorkerLease {
  worker: string;
  jobs: number;
  /** The latest lease end the worker renewed: a live worker keeps it in the future. */
  leaseUntil: Date;
}

export interface WebhookQueueFigures {
  pending: number;
  /** Pending deliveries that failed at least once and wait for their next attempt. */
  retrying: number;
  nextAttemptAt: Date | null;
  delivering: number;
  /** Deliveries given up (retry window over) since the window's start. */
  failedRecently: number;
}

export interface FailingDelivery {
  id: string;
  userId: string;
  url: string;
  status: string;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  updatedAt: Date;
}

export async function readJobQueueFigures(q: Queryable, now: Date): Promise<JobQueueFigures> {
  const { rows } = await q.query<{
    due: number;
    retry_backlog: number;
    next_retry_at: Date | null;
    processing: number;
    expired_leases: number;
  }>(
    `select count(*) filter (where status = 'pending' and run_after <= $1)::int as due,
            count(*) filter (where status = 'pending' and run_after > $1
                               and (attempts > 0 or deferred_retries > 0 or unreachable_retries > 0))::int
              as retry_backlog,
            min(run_after) filter (where status = 'pending' and run_after > $1
                               and (attempts > 0 or deferred_retries > 0 or unreachable_retries > 0))
              as next_retry_at,
            count(*) filter (where status = 'processing')::int as processing,
            count(*) filter (where status = 'processing' and locked_until < $1)::int as expired_leases
       from email_jobs where status in ('pending', 'processing')`,
    [now],
  );
  const r = rows[0]!;
  return {
    due: r.due,
    retryBacklog: r.retry_backlog,
    nextRetryAt: r.next_retry_at,
    processing: r.processing,
    expiredLeases: r.expired_leases,
  };
}

/** Workers holding jobs, busiest first (at most `limit`). */
export async function listWorkerLeases(q: Queryable, limit: number): Promise<WorkerLease[]> {
  const { rows } = await q.query<{ worker: string; jobs: number; lease_until: Date }>(
    `select locked_by as worker, count(*)::int as jobs, max(locked_until) as lease_until
       from email_jobs where status = 'processing' and locked_by is not null
      group by locked_by order by count(*) desc, locked_by limit $1`,
    [limit],
  );
  return rows.map((r) => ({
    worker: r.worker,
    jobs: r.jobs,
    leaseUntil: r.lease_until,
  }));
}

export async function readWebhookQueueFigures(
  q: Queryable,
  now: Date,
  failedSince: Date,
): Promise<WebhookQueueFigures> {
  const { rows } = await q.query<{
    pending: number;
    retrying: number;
    next_attempt_at: Date | null;
    delivering: number;
    failed_recently: number;
  }>(
    `select count(*) filter (where status = 'pending')::int as pending,
            count(*) filter (where status = 'pending' and attempts > 0)::int as retrying,
            min(next_attempt_at) filter (where status = 'pending' and attempts > 0 and next_attempt_at > $1)
              as next_attempt_at,
            count(*) filter (where status = 'delivering')::int as delivering,
            count(*) filter (where status = 'failed' and updated_at >= $2)::int as failed_recently
       from webhook_deliveries
      where status in ('pending', 'delivering') or (status = 'failed' and updated_at >= $2)`,
    [now, failedSince],
  );
  const r = rows[0]!;
  return {
    pending: r.pending,
    retrying: r.retrying,
    nextAttemptAt: r.next_attempt_at,
    delivering: r.delivering,
    failedRecently: r.failed_recently,
  };
}

/** The latest deliveries that failed an attempt (retrying or given up), newest first. */
export async function listFailingDeliveries(
  q: Queryable,
  failedSince: Date,
  limit: number,
): Promise<FailingDelivery[]> {
  const { rows } = await q.query<{
    id: string;
    user_id: string;
    url: string;
    status: string;
    attempts: number;
    last_status_code: number | null;
    last_error: string | null;
    next_attempt_at: Date;
    updated_at: Date;
  }>(
    `select id, user_id, url, status, attempts, last_status_code, last_error, next_attempt_at, updated_at
       from webhook_deliveries
      where (status = 'pending' and attempts > 0) or (status = 'failed' and updated_at >= $1)
      order by updated_at desc, id limit $2`,
    [failedSince, limit],
  );
  return rows.map((r) => ({
    id: r.id,
    userId: r.user_id,
    url: r.url,
    status: r.status,
    attempts: r.attempts,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    nextAttemptAt: r.status === "pending" ? r.next_attempt_at : null,
    updatedAt: r.updated_at,
  }));
}
