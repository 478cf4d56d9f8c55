import { Type } from "typebox";
import { MAX_GRANT_CREDITS } from "../../credits/limits.ts";
import { MAX_USERS_PAGE, toOperatorUserJson, type QueueHealth } from "../../users/operator.ts";
import { ApiKeyListItem } from "./api-keys.ts";
import { DateTime, MAX_OFFSET, ref, Uuid } from "./common.ts";

// The operator API (ADMIN_TOKEN). Hidden from the OpenAPI document like the loopback admin API:
// it is the console's contract, not the customers'; README "Operator console" describes it.

const closed = { additionalProperties: false } as const;
const NullableDate = Type.Union([DateTime, Type.Null()]);

export const OperatorUserParams = Type.Object({ id: Uuid });
export const OperatorKeyParams = Type.Object({ id: Uuid, keyId: Uuid });

export const ListUsersQuery = Type.Object(
  {
    email: Type.Optional(Type.String({ minLength: 1, maxLength: 320, description: "Part of the address" })),
    limit: Type.Integer({ minimum: 1, maximum: MAX_USERS_PAGE, default: 50 }),
    offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 }),
  },
  closed,
);

export const OperatorUserSchema = Type.Object({
  user_id: Uuid,
  email: Type.Union([Type.String(), Type.Null()]),
  balance: Type.Integer(),
  is_active: Type.Boolean(),
  created_at: DateTime,
  deactivated_at: NullableDate,
  active_keys: Type.Integer(),
  last_used_at: NullableDate,
  usage: Type.Object({
    days: Type.Integer(),
    verifications: Type.Integer(),
    credits_charged: Type.Integer(),
  }),
});

export const ListUsersReply = Type.Object({
  users: Type.Array(OperatorUserSchema),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
});

export const DeactivateUserReply = Type.Object({
  user: OperatorUserSchema,
  deactivated_key_ids: Type.Array(Uuid),
});

export const OperatorGrantBody = Type.Object(
  {
    amount: Type.Integer({ minimum: 1, maximum: MAX_GRANT_CREDITS }),
    reason: Type.String({ minLength: 1, maxLength: 500 }),
  },
  closed,
);

export const OperatorKeysReply = Type.Object({ api_keys: Type.Array(ref(ApiKeyListItem)) });

export const QueueHealthReply = Type.Object({
  at: DateTime,
  jobs: Type.Object({
    due: Type.Integer(),
    retry_backlog: Type.Integer(),
    next_retry_at: NullableDate,
    processing: Type.Integer(),
    expired_leases: Type.Integer(),
  }),
  workers: Type.Array(
    Type.Object({
      worker: Type.String(),
      jobs: Type.Integer(),
      lease_until: DateTime,
      is_live: Type.Boolean(),
    }),
  ),
  webhooks: Type.Object({
    pending: Type.Integer(),
    retrying: Type.Integer(),
    next_attempt_at: NullableDate,
    delivering: Type.Integer(),
    failed_24h: Type.Integer(),
  }),
  failing_deliveries: Type.Array(
    Type.Object({
      id: Uuid,
      user_id: Uuid,
      url: Type.String(),
      status: Type.String(),
      attempts: Type.Integer(),
      last_status_code: Type.Union([Type.Integer(), Type.Null()]),
      last_error: Type.Union([Type.String(), Type.Null()]),
      next_attempt_at: NullableDate,
      updated_at: DateTime,
    }),
  ),
});

const iso = (d: Date | null): string | null => d?.toISOString() ?? null;

/** The user as the operator API answers it (the CLI's --json prints the same object). */
export const toOperatorUserReply = toOperatorUserJson;

export const toQueueHealthReply = (h: QueueHealth) => ({
  at: h.at.toISOString(),
  jobs: {
    due: h.jobs.due,
    retry_backlog: h.jobs.retryBacklog,
    next_retry_at: iso(h.jobs.nextRetryAt),
    processing: h.jobs.processing,
    expired_leases: h.jobs.expiredLeases,
  },
  workers: h.workers.map((w) => ({
    worker: w.worker,
    jobs: w.jobs,
    lease_until: w.leaseUntil.toISOString(),
    is_live: w.leaseUntil.getTime() >= h.at.getTime(),
  })),
  webhooks: {
    pending: h.webhooks.pending,
    retrying: h.webhooks.retrying,
    next_attempt_at: iso(h.webhooks.nextAttemptAt),
    delivering: h.webhooks.delivering,
    failed_24h: h.webhooks.failedRecently,
  },
  failing_deliveries: h.failingDeliveries.map((d) => ({
    id: d.id,
    user_id: d.userId,
    url: d.url,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: iso(d.nextAttemptAt),
    updated_at: d.updatedAt.toISOString(),
  })),
});

// The loopback admin API's `users` calls (the CLI while `serve` owns an embedded DATA_DIR).
export const AdminListUsersBody = Type.Object(
  {
    email: Type.Union([Type.String({ minLength: 1, maxLength: 320 }), Type.Null()]),
    limit: Type.Integer({ minimum: 1, maximum: MAX_USERS_PAGE }),
    offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET }),
  },
  closed,
);
export const AdminFindUserBody = Type.Union([
  Type.Object({ id: Uuid }, closed),
  Type.Object({ email: Type.String({ minLength: 1, maxLength: 320 }) }, closed),
]);
export const AdminUserIdBody = Type.Object({ id: Uuid }, closed);
/** `mailprobe users sign-in-link`: a user and, optionally, the key to tie the link to. */
export const AdminSignInLinkBody = Type.Object(
  { id: Uuid, api_key_id: Type.Union([Uuid, Type.Null()]) },
  closed,
);
export const AdminSignInLinkReply = Type.Object({
  token: Type.String(),
  user_id: Uuid,
  api_key_id: Uuid,
  expires_at: Type.String({ format: "date-time" }),
});
