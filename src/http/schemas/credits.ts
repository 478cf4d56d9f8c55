import { Type } from "typebox";
import type { CreditTransaction } from "../../credits/service.ts";
import { DateTime, MAX_OFFSET, ref, Uuid } from "./common.ts";

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

export const CreditTransactionSchema = Type.Object(
  {
    id: Uuid,
    user_id: Uuid,
    type: Type.Union([Type.Literal("grant"), Type.Literal("deduction")]),
    amount: Type.Integer({ description: "Signed credit delta: > 0 for a grant, < 0 for a deduction" }),
    balance_after: Type.Integer(),
    reason: Type.Optional(Type.String()),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          "Attribution: `source` (`api_key`, `frontend` or `operator`; missing on legacy rows), `api_key_id` and `api_key_purpose` when an API key did it",
      }),
    ),
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
