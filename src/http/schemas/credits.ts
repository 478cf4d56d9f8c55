import { Type } from "typebox";
import type { CreditTransaction } from "../../credits/service.ts";
import { DateTime, MAX_OFFSET, ref, Uuid } from "./common.ts";
import { ApiKeyPurposeSchema, TransactionSourceSchema, TransactionTypeSchema } from "./enums.ts";

export const BalanceReply = Type.Object(
  { user_id: Uuid, balance: Type.Integer({ description: "Credits available; never negative" }) },
  { $id: "CreditBalance", description: "The caller's credit balance" },
);

export const TransactionsQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
    offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 }),
    task_id: Type.Optional(
      Type.String({
        format: "uuid",
        description:
          "Only the rows of this task (its reservation, refunds and late charges); `total` then counts those",
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * What the ledger writers put in a row's metadata (auth/principal.ts attributionOf, the task and
 * realtime charges, the operator's grants); other keys may appear. The properties are declared
 * in the order PostgreSQL's jsonb returns keys (shorter first, then bytewise) and the serialiser
 * writes declared properties first, so the bytes of a row are those of the stored object.
 */
const TransactionMetadataSchema = Type.Object(
  {
    source: Type.Optional(ref(TransactionSourceSchema)),
    task_id: Type.Optional(
      Type.String({
        format: "uuid",
        description: "The task whose reservation, refund or late charge this is",
      }),
    ),
    api_key_id: Type.Optional(
      Type.String({ format: "uuid", description: "The API key that made the request (source `api_key`)" }),
    ),
    // Typed string like the ledger's metadata; the keys table's check keeps it one of the purposes.
    api_key_purpose: Type.Optional(Type.Unsafe<string>(ref(ApiKeyPurposeSchema))),
    verification_id: Type.Optional(
      Type.String({ format: "uuid", description: "The realtime verification this charge paid for" }),
    ),
  },
  {
    additionalProperties: true,
    description:
      "Attribution: `source` (missing on legacy rows only); with source `api_key`, the key's `api_key_id` and its `api_key_purpose` at the time; `task_id` or `verification_id` for what the credits paid for or returned. Other keys may appear",
  },
);

export const CreditTransactionSchema = Type.Object(
  {
    id: Uuid,
    user_id: Uuid,
    type: ref(TransactionTypeSchema),
    amount: Type.Integer({ description: "Signed credit delta: > 0 for a grant, < 0 for a deduction" }),
    balance_after: Type.Integer(),
    reason: Type.Optional(Type.String()),
    metadata: Type.Optional(TransactionMetadataSchema),
    created_at: DateTime,
  },
  { $id: "CreditTransaction", description: "One entry of the append-only credit ledger" },
);

export const TransactionsReply = Type.Object(
  {
    transactions: Type.Array(ref(CreditTransactionSchema)),
    total: Type.Integer({ description: "Transactions of the user (all pages)" }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { $id: "CreditTransactionList", description: "A page of the ledger, newest first" },
);

export const toTransactionReply = (t: CreditTransaction) => ({
  id: t.id,
  user_id: t.userId,
  type: t.type,
  amount: t.amount,
  balance_after: t.balanceAfter,
  ...(t.reason !== null ? { reason: t.reason } : {}),
  metadata: t.metadata,
  created_at: t.createdAt.toISOString(),
});
