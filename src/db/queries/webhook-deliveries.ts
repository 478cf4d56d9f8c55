import type { Database, Queryable } from "../client.ts";

// The webhook outbox (webhook_deliveries) and its attempt log (webhook_attempts). The queue's
// rules live here, graphile-worker style: one statement claims, one statement records an attempt
// and decides what happens next, one statement frees leases of crashed dispatchers.
// Times come in as parameters (never now()) so tests drive them with a ManualClock.

export type WebhookDeliveryStatus = "pending" | "delivering" | "delivered" | "failed";

/** One outbox row. */
export interface WebhookDelivery {
  id: string;
  userId: string;
  taskId: string | null;
  eventType: string;
  url: string;
  payload: Record<string, unknown>;
  status: WebhookDeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  lockedUntil: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

interface WebhookDeliveryRow {
  id: string;
  user_id: string;
  task_id: string | null;
  event_type: string;
  url: string;
  payload: Record<string, unknown>;
  status: WebhookDeliveryStatus;
  attempts: number;
  next_attempt_at: Date;
  locked_until: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
}

const toDelivery = (r: WebhookDeliveryRow): WebhookDelivery => ({
  id: r.id,
  userId: r.user_id,
  taskId: r.task_id,
  eventType: r.event_type,
  url: r.url,
  payload: r.payload,
  status: r.status,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  lockedUntil: r.locked_until,
  lastStatusCode: r.last_status_code,
  lastError: r.last_error,
  deliveredAt: r.delivered_at,
  createdAt: r.created_at,
});

/** A delivery this dispatcher now holds, with what it needs to sign and send it. */
export interface ClaimedWebhookDelivery {
  id: string;
  userId: string;
  eventType: string;
  url: string;
  payload: Record<string, unknown>;
  /** Attempt number of this claim (1 for the first); also the fencing token for recording it. */
  attempts: number;
  createdAt: Date;
  /** The user's Standard Webhooks secret ("whsec_…"). */
  webhookSecret: string;
  /** The secret before the last rotation, and until when it still signs (null: none). */
  previousSecret: { secret: string; until: Date } | null;
}

interface ClaimedRow {
  id: string;
  user_id: string;
  event_type: string;
  url: string;
  payload: Record<string, unknown>;
  attempts: number;
  created_at: Date;
  webhook_secret: string;
  webhook_secret_previous: string | null;
  webhook_secret_previous_until: Date | null;
}

/** One webhook_attempts row. */
export interface WebhookAttempt {
  id: string;
  deliveryId: string;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
}

interface WebhookAttemptRow {
  id: string;
  delivery_id: string;
  attempted_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

/**
 * Inserts a pending delivery due at `at`; false when (task, event type) already has one. A
 * delivery without a task (a test ping) never conflicts.
 */
export async function insertWebhookDelivery(
  q: Queryable,
  d: {
    id: string;
    userId: string;
    taskId: string | null;
    eventType: string;
    url: string;
    payload: object;
    at: Date;
  },
): Promise<boolean> {
  const { rowCount } = await q.query(
    `insert into webhook_deliveries
       (id, user_id, task_id, event_type, url, payload, status, next_attempt_at, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, 'pending', $7, $7, $7)
     on conflict (task_id, event_type) do nothing`,
    [d.id, d.userId, d.taskId, d.eventType, d.url, JSON.stringify(d.payload), d.at],
  );
  return rowCount > 0;
}

// The receiver host of a delivery's URL, in SQL: lowercase, without userinfo, port or trailing
// root dot; IPv6 literals keep their brackets. The per-host limit counts by it.
const RECEIVER_HOST = String.raw`rtrim(lower(substring(url from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?(\[[^]/?#]*\]|[^:/?#]*)')), '.')`;

// Serialises claims across dispatchers (cluster mode), so the in-flight counts a claim reads are
// not raced by another claim: the limits below hold cluster-wide, exactly. "whkc".
const CLAIM_LOCK_ID = 0x77686b63;

/**
 * Claims up to `limit` due deliveries, fairly:
 * - at most `maxPerHost` deliveries in flight ('delivering' under a live lease, any dispatcher)
 *   per receiver host, so a slow receiver only ever occupies its own slots;
 * - at most `maxPerUser` in flight per user;
 * - users take turns: every user's oldest due delivery before anyone's second (round robin),
 *   also among the users of one shared receiver host.
 * The attempt is counted at claim time, and the lease (`lockedUntil`) bounds how long a crash can
 * hold it. The choice reads no locks; the rows are then taken FOR UPDATE SKIP LOCKED, and the
 * whole claim runs under a transaction-scoped advisory lock (one short transaction, no I/O).
 */
export async function claimWebhookDeliveries(
  db: Database,
  c: { now: Date; limit: number; lockedUntil: Date; maxPerHost: number; maxPerUser: number },
): Promise<ClaimedWebhookDelivery[]> {
  const rows = await db.transaction(async (tx) => {
    await tx.query("select pg_advisory_xact_lock($1)", [CLAIM_LOCK_ID]);
    const { rows } = await tx.query<ClaimedRow>(
      `with inflight as (
         select user_id, ${RECEIVER_HOST} as host from webhook_deliveries
          where status = 'delivering' and locked_until >= $1),
       busy_host as (select host, count(*) as n from inflight group by host),
       busy_user as (select user_id, count(*) as n from inflight group by user_id),
       due as (
         select id, user_id, next_attempt_at, ${RECEIVER_HOST} as host,
                row_number() over (partition by user_id order by next_attempt_at, id) as user_turn
           from webhook_deliveries
          where status = 'pending' and next_attempt_at <= $1),
       hosted as (
         select due.id, due.user_id, due.next_attempt_at
           from (select *, row_number() over (partition by host order by user_turn, next_attempt_at, id)
                             as host_turn
                   from due) due
           left join busy_host bh on bh.host = due.host
          where due.host_turn + coalesce(bh.n, 0) <= $4),
       fair as (
         select id, user_id, next_attempt_at,
                row_number() over (partition by user_id order by next_attempt_at, id) as turn
           from hosted),
       chosen as (
         select f.id from fair f
           left join busy_user bu on bu.user_id = f.user_id
          where f.turn + coalesce(bu.n, 0) <= $5
          order by f.turn, f.next_attempt_at, f.id
          limit $2),
       picked as (
         select d.id from webhook_deliveries d join chosen on chosen.id = d.id
          where d.status = 'pending'
          for update of d skip locked)
       update webhook_deliveries d
          set status = 'delivering', attempts = d.attempts + 1, locked_until = $3, updated_at = $1
         from picked, users u
        where d.id = picked.id and u.id = d.user_id
       returning d.id, d.user_id, d.event_type, d.url, d.payload, d.attempts, d.created_at, u.webhook_secret,
                 u.webhook_secret_previous, u.webhook_secret_previous_until`,
      [c.now, c.limit, c.lockedUntil, c.maxPerHost, c.maxPerUser],
    );
    return rows;
  });
  return rows.map((r) => ({
    id: r.id,
    userId: r.user_id,
    eventType: r.event_type,
    url: r.url,
    payload: r.payload,
    attempts: r.attempts,
    createdAt: r.created_at,
    webhookSecret: r.webhook_secret,
    previousSecret:
      r.webhook_secret_previous !== null && r.webhook_secret_previous_until !== null
        ? { secret: r.webhook_secret_previous, until: r.webhook_secret_previous_until }
        : null,
  }));
}

/** Returns deliveries whose dispatcher died mid-attempt (lease expired) to the queue; their count. */
export async function releaseExpiredWebhookLeases(q: Queryable, now: Date): Promise<number> {
  const { rowCount } = await q.query(
    `update webhook_deliveries set status = 'pending', locked_until = null, updated_at = $1
      where status = 'delivering' and locked_until < $1`,
    [now],
  );
  return rowCount;
}

/** What the dispatcher decided about one attempt. */
export type AttemptDisposition =
  /** A 2xx answer. */
  | { kind: "delivered" }
  /**
   * Try again `delayMs` after `finishedAt`, but never past `createdAt + retryWindowMs` (the window
   * starts at the last redelivery instead, if any).
   */
  | { kind: "retry"; delayMs: number; retryWindowMs: number }
  /** Permanent: never retried (refused by policy). */
  | { kind: "failed" };

/**
 * Logs one attempt and settles its delivery, in one statement (atomic without a transaction):
 * delivered, failed, or pending again with the next attempt time — or failed when the retry
 * window has closed. The final attempt is scheduled at the window's end rather than skipped.
 * Only the claim identified by `claimAttempts` may settle the row (a fencing token): if the lease
 * expired and another dispatcher re-claimed it meanwhile, the attempt is still logged but the row
 * is left to its new owner, and null is returned.
 */
export async function recordWebhookAttempt(
  q: Queryable,
  a: {
    id: string;
    deliveryId: string;
    claimAttempts: number;
    attemptedAt: Date;
    finishedAt: Date;
    durationMs: number;
    statusCode: number | null;
    error: string | null;
    disposition: AttemptDisposition;
  },
): Promise<WebhookDeliveryStatus | null> {
  const d = a.disposition;
  const { rows } = await q.query<{ status: WebhookDeliveryStatus }>(
    `with attempt as (
       insert into webhook_attempts (id, delivery_id, attempted_at, duration_ms, status_code, error)
       values ($1, $2, $3, $4, $5, $6)
       returning delivery_id)
     update webhook_deliveries d
        set status = case
              when $8::text = 'delivered' then 'delivered'
              when $8::text = 'failed' then 'failed'
              when $7::timestamptz >= coalesce(d.retry_window_from, d.created_at)
                                       + $10::double precision * interval '1 millisecond' then 'failed'
              else 'pending' end,
            next_attempt_at = case when $8::text = 'retry'
              then least($7::timestamptz + $9::double precision * interval '1 millisecond',
                         coalesce(d.retry_window_from, d.created_at) + $10::double precision * interval '1 millisecond')
              else d.next_attempt_at end,
            delivered_at = case when $8::text = 'delivered' then $7::timestamptz else null end,
            locked_until = null,
            last_status_code = $5,
            last_error = $6,
            updated_at = $7::timestamptz
       from attempt
      where d.id = attempt.delivery_id and d.status = 'delivering' and d.attempts = $11
     returning d.status`,
    [
      a.id,
      a.deliveryId,
      a.attemptedAt,
      Math.max(0, Math.round(a.durationMs)),
      a.statusCode,
      a.error,
      a.finishedAt,
      d.kind,
      d.kind === "retry" ? d.delayMs : 0,
      d.kind === "retry" ? d.retryWindowMs : 0,
      a.claimAttempts,
    ],
  );
  return rows[0]?.status ?? null;
}

export async function findWebhookDelivery(q: Queryable, id: string): Promise<WebhookDelivery | null> {
  const { rows } = await q.query<WebhookDeliveryRow>("select * from webhook_deliveries where id = $1", [id]);
  return rows[0] ? toDelivery(rows[0]) : null;
}

/** The deliveries of one task (at most one per event type), oldest first. */
export async function listWebhookDeliveriesOfTask(q: Queryable, taskId: string): Promise<WebhookDelivery[]> {
  const { rows } = await q.query<WebhookDeliveryRow>(
    "select * from webhook_deliveries where task_id = $1 order by created_at, id",
    [taskId],
  );
  return rows.map(toDelivery);
}

/** Every attempt of a delivery, in order. */
export async function listWebhookAttempts(q: Queryable, deliveryId: string): Promise<WebhookAttempt[]> {
  const { rows } = await q.query<WebhookAttemptRow>(
    "select * from webhook_attempts where delivery_id = $1 order by attempted_at, id",
    [deliveryId],
  );
  return rows.map((r) => ({
    id: r.id,
    deliveryId: r.delivery_id,
    attemptedAt: r.attempted_at,
    durationMs: r.duration_ms,
    statusCode: r.status_code,
    error: r.error,
  }));
}

/** One page of a user's deliveries, newest first, and how many they have in all. */
export async function listWebhookDeliveriesOfUser(
  q: Queryable,
  userId: string,
  page: { limit: number; offset: number },
): Promise<{ deliveries: WebhookDelivery[]; total: number }> {
  const { rows } = await q.query<WebhookDeliveryRow>(
    `select * from webhook_deliveries where user_id = $1
      order by created_at desc, id desc limit $2 offset $3`,
    [userId, page.limit, page.offset],
  );
  const counted = await q.query<{ n: string | number }>(
    "select count(*) as n from webhook_deliveries where user_id = $1",
    [userId],
  );
  return { deliveries: rows.map(toDelivery), total: Number(counted.rows[0]?.n ?? 0) };
}

/** What asking to redeliver a delivery did. */
export type RequeueOutcome =
  | { kind: "requeued"; delivery: WebhookDelivery }
  /** An attempt is running now; its outcome decides what happens next. */
  | { kind: "in_flight" }
  /** No such delivery of this user. */
  | { kind: "not_found" };

/**
 * Queues a user's delivery for an attempt at `at`, whatever its state (delivered, failed or
 * waiting for a retry), with a fresh retry window from `at`. The row keeps its id, which is the
 * `webhook-id` receivers deduplicate on, and its payload, so the same message is sent again.
 * A delivery being attempted right now is left alone (`in_flight`).
 */
export async function requeueWebhookDelivery(
  q: Queryable,
  r: { id: string; userId: string; at: Date },
): Promise<RequeueOutcome> {
  const { rows } = await q.query<WebhookDeliveryRow>(
    `update webhook_deliveries
        set status = 'pending', next_attempt_at = $3, retry_window_from = $3, delivered_at = null,
            updated_at = $3
      where id = $1 and user_id = $2 and status <> 'delivering'
     returning *`,
    [r.id, r.userId, r.at],
  );
  if (rows[0]) return { kind: "requeued", delivery: toDelivery(rows[0]) };
  const { rows: found } = await q.query<{ status: WebhookDeliveryStatus }>(
    "select status from webhook_deliveries where id = $1 and user_id = $2",
    [r.id, r.userId],
  );
  return found[0] ? { kind: "in_flight" } : { kind: "not_found" };
}

/** A user's deliveries of `eventType` not settled yet (pending or being attempted). */
export async function countUnsettledWebhookDeliveries(
  q: Queryable,
  userId: string,
  eventType: string,
): Promise<number> {
  const { rows } = await q.query<{ n: string | number }>(
    `select count(*) as n from webhook_deliveries
      where user_id = $1 and event_type = $2 and status in ('pending', 'delivering')`,
    [userId, eventType],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Ends the user's deliveries not yet made (pending, and delivering: an attempt in flight is not
 * recorded over a failed row) as `failed` with `reason`: all of them, or those of tasks created
 * with one of `apiKeyIds`. Returns how many.
 */
export async function dropUndeliveredWebhooks(
  q: Queryable,
  r: { userId: string; apiKeyIds: readonly string[] | null; reason: string; at: Date },
): Promise<number> {
  const { rowCount } = await q.query(
    `update webhook_deliveries
        set status = 'failed', locked_until = null, last_error = $3, updated_at = $4
      where user_id = $1 and status in ('pending', 'delivering')
        and ($2::uuid[] is null or task_id in (select id from tasks where user_id = $1 and api_key_id = any($2::uuid[])))`,
    [r.userId, r.apiKeyIds, r.reason, r.at],
  );
  return rowCount;
}
