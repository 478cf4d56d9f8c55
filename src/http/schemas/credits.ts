import { Type } from "typebox";
import type { CreditTransaction } from "../../credits/service.ts";
import { DateTime, MAX_OFFSET, Uuid } from "./common.ts";

export const BalanceReply = Type.Object({ user_id: Uuid, balance: Type.Integer() });

export const TransactionsQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
    offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 }),
  },
  { additionalProperties: false },
);

export const CreditTransactionSchema = Type.Object({
  id: Uuid,
  user_id: Uuid,
  type: Type.Union([Type.Literal("grant"), Type.Literal("deduction")]),
  amount: Type.Integer(),
  balance_after: Type.Integer(),
  reason: Type.Optional(Type.String()),
  metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  created_at: DateTime,
});

export const TransactionsReply = Type.Object({
  transactions: Type.Array(CreditTransactionSchema),
  total: Type.Integer(),
  limit: Type.Integer(),
  offset: Type.Integer(),
});

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
