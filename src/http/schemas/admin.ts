import { Type } from "typebox";
import type { CreditTransaction } from "../../credits/service.ts";
import { ListApiKeysReply, PurposeInput } from "./api-keys.ts";
import type { CreatedUser } from "../../users/service.ts";
import { Uuid } from "./common.ts";

// The loopback admin API the CLI calls while `serve` owns an embedded data directory. Hidden
// from the OpenAPI document: it is not part of the public contract.

const closed = { additionalProperties: false } as const;

export const CreateUserBody = Type.Object(
  {
    credits: Type.Integer({ minimum: 0 }),
    email: Type.Union([Type.String({ format: "email" }), Type.Null()]),
  },
  closed,
);

export const CreatedUserReply = Type.Object({
  user_id: Uuid,
  balance: Type.Integer(),
  api_key: Type.String(),
  api_key_id: Uuid,
});

export const GrantCreditsBody = Type.Object(
  {
    user_id: Uuid,
    amount: Type.Integer({ minimum: 1 }),
    reason: Type.String({ minLength: 1 }),
  },
  closed,
);

export const GrantCreditsReply = Type.Object({ transaction_id: Uuid, balance_after: Type.Integer() });

export const toCreatedUserReply = (created: CreatedUser) => ({
  user_id: created.user.id,
  balance: created.user.balance,
  api_key: created.apiKey.plaintext,
  api_key_id: created.apiKey.id,
});

export const toGrantCreditsReply = (t: CreditTransaction) => ({
  transaction_id: t.id,
  balance_after: t.balanceAfter,
});

// `mailprobe keys create|list|revoke` through the running server (same domain functions as the API).
export const AdminCreateKeyBody = Type.Object(
  {
    user_id: Uuid,
    name: Type.String({ minLength: 1, maxLength: 100 }),
    purpose: PurposeInput,
  },
  closed,
);

export const AdminUserKeysBody = Type.Object({ user_id: Uuid }, closed);

export const AdminRevokeKeyBody = Type.Object({ user_id: Uuid, id: Uuid }, closed);

export const AdminListKeysReply = ListApiKeysReply;
