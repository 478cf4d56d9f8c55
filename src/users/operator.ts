import type { Database, Transaction } from "../db/client.ts";
import { grantCredits } from "../credits/ledger.ts";
import { OPERATOR_METADATA, requireApplied } from "../credits/service.ts";
import type { CreditTransaction } from "../db/queries/credit-transactions.ts";
import { announceInvalidation, type InvalidationBus } from "../db/invalidation-bus.ts";
import {
  deactivateUser,
  findOperatorUser,
  listOperatorUsers,
  type OperatorUserRow,
} from "../db/queries/operator-users.ts";
import {
  listFailingDeliveries,
  listWorkerLeases,
  readJobQueueFigures,
  readWebhookQueueFigures,
  type FailingDelivery,
  type JobQueueFigures,
  type WebhookQueueFigures,
  type WorkerLease,
} from "../db/queries/queue-health.ts";
import type { ApiKeyListing, ApiKeysService } from "../keys/service.ts";
import { notFound } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";

export type OperatorUser = OperatorUserRow;

/** The one JSON form of a user for operators: the operator API's answer and `mailprobe users --json`. */
export const toOperatorUserJson = (u: OperatorUser) => ({
  user_id: u.id,
  email: u.email,
  balance: u.balance,
  is_active: u.deactivatedAt === null,
  created_at: u.createdAt.toISOString(),
  deactivated_at: u.deactivatedAt?.toISOString() ?? null,
  active_keys: u.activeKeys,
  last_used_at: u.lastUsedAt?.toISOString() ?? null,
  usage: { days: USAGE_WINDOW_DAYS, verifications: u.verifications, credits_charged: u.creditsCharged },
});
export type OperatorUserJson = ReturnType<typeof toOperatorUserJson>;

/** Usage figures of the console cover this many days back from now. */
const USAGE_WINDOW_DAYS = 30;
/** Given-up webhook deliveries are counted and listed over this window. */
const WEBHOOK_FAILURE_WINDOW_HOURS = 24;
/** Largest page of users (listings are bounded; `offset` pages on). */
export const MAX_USERS_PAGE = 100;
const WORKERS_SHOWN = 50;
const FAILING_DELIVERIES_SHOWN = 20;

export interface QueueHealth {
  at: Date;
  jobs: JobQueueFigures;
  workers: WorkerLease[];
  webhooks: WebhookQueueFigures;
  failingDeliveries: FailingDelivery[];
}

/** What the operator (ADMIN_TOKEN, `mailprobe users`) may do across all users. */
export interface OperatorService {
  listUsers(page: { email: string | null; limit: number; offset: number }): Promise<{
    users: OperatorUser[];
    total: number;
  }>;
  /** By id, or by exact email (case-insensitive); 404 when none. */
  findUser(by: { id: string } | { email: string }): Promise<OperatorUser>;
  /** Deactivates the user and all their keys (their sessions end with the keys); idempotent. */
  deactivateUser(id: string): Promise<{ user: OperatorUser; deactivatedKeyIds: string[] }>;
  /** A grant row with metadata `{ source: "operator" }` (OPERATOR_METADATA) and the operator's reason. */
  grant(userId: string, amount: number, reason: string): Promise<CreditTransaction>;
  listKeys(userId: string): Promise<ApiKeyListing[]>;
  /** One key (the user's last active key is refused, as for the user: deactivate the user instead). */
  revokeKey(userId: string, keyId: string): Promise<void>;
  queueHealth(): Promise<QueueHealth>;
}

/**
 * Called in the transaction that deactivates a user, with the user's row locked: ends the work
 * the user started (tasks/stop-work.ts, wired by the composition root).
 */
export type OnUserDeactivated = (tx: Transaction, userId: string, at: Date) => Promise<void>;

export function createOperatorService(
  db: Database,
  clock: Clock,
  apiKeys: ApiKeysService,
  bus: InvalidationBus | null,
  onDeactivated: OnUserDeactivated = async () => {},
): OperatorService {
  const usageSince = (): Date => new Date(clock.now().getTime() - USAGE_WINDOW_DAYS * 86_400_000);
  const find = async (by: { id: string } | { email: string }): Promise<OperatorUser> => {
    const user = await findOperatorUser(db, by, usageSince());
    if (!user) throw notFound("User");
    return user;
  };
  return {
    async listUsers(page) {
      const { rows, total } = await listOperatorUsers(db, {
        ...page,
        limit: Math.min(MAX_USERS_PAGE, page.limit),
        usageSince: usageSince(),
      });
      return { users: rows, total };
    },
    findUser: find,
    async deactivateUser(id) {
      const keyIds = await db.transaction(async (tx) => {
        const at = clock.now();
        const ids = await deactivateUser(tx, id, at);
        if (ids === null) throw notFound("User");
        await onDeactivated(tx, id, at);
        for (const keyId of ids) await announceInvalidation(tx, { kind: "api_key", id: keyId });
        return ids;
      });
      for (const keyId of keyIds) bus?.applyLocally({ kind: "api_key", id: keyId });
      return { user: await find({ id }), deactivatedKeyIds: keyIds };
    },
    async grant(userId, amount, reason) {
      return requireApplied(
        await db.transaction((tx) =>
          grantCredits(tx, { userId, amount, reason, metadata: { ...OPERATOR_METADATA }, at: clock.now() }),
        ),
      );
    },
    async listKeys(userId) {
      await find({ id: userId });
      return apiKeys.list(userId, false);
    },
    revokeKey: (userId, keyId) => apiKeys.deactivate(userId, keyId),
    async queueHealth() {
      const at = clock.now();
      const failedSince = new Date(at.getTime() - WEBHOOK_FAILURE_WINDOW_HOURS * 3_600_000);
      const [jobs, workers, webhooks, failingDeliveries] = await Promise.all([
        readJobQueueFigures(db, at),
        listWorkerLeases(db, WORKERS_SHOWN),
        readWebhookQueueFigures(db, at, failedSince),
        listFailingDeliveries(db, failedSince, FAILING_DELIVERIES_SHOWN),
      ]);
      return { at, jobs, workers, webhooks, failingDeliveries };
    },
  };
}
