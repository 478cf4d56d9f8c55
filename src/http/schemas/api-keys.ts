import { Type } from "typebox";
import type { ApiKeyListing, CreatedApiKey } from "../../keys/service.ts";
import { DateTime, Uuid } from "./common.ts";

export const ApiKeyPurposeSchema = Type.Union(
  [Type.Literal("zapier"), Type.Literal("n8n"), Type.Literal("google sheets"), Type.Literal("custom")],
  { description: "Integration the key is for" },
);

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    purpose: ApiKeyPurposeSchema,
  },
  { additionalProperties: false },
);

export const CreatedApiKeyReply = Type.Object({
  id: Uuid,
  user_id: Uuid,
  key: Type.String({ description: "Plaintext key, shown once (also via GET ?reveal=true)" }),
  name: Type.String(),
  purpose: Type.String(),
  created_at: DateTime,
});

export const ListApiKeysQuery = Type.Object({ reveal: Type.Optional(Type.Boolean({ default: false })) });

export const ApiKeyListItem = Type.Object({
  id: Uuid,
  name: Type.String(),
  purpose: Type.String(),
  is_active: Type.Boolean(),
  created_at: DateTime,
  last_used_at: Type.Union([DateTime, Type.Null()]),
  prefix: Type.String(),
  key: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});

export const ListApiKeysReply = Type.Object({ api_keys: Type.Array(ApiKeyListItem) });

export const toCreatedApiKeyReply = ({ record, plaintext }: CreatedApiKey) => ({
  id: record.id,
  user_id: record.userId,
  key: plaintext,
  name: record.name,
  purpose: record.purpose,
  created_at: record.createdAt.toISOString(),
});

export const toApiKeyListItem = ({ record, plaintext }: ApiKeyListing) => ({
  id: record.id,
  name: record.name,
  purpose: record.purpose,
  is_active: record.isActive,
  created_at: record.createdAt.toISOString(),
  last_used_at: record.lastUsedAt?.toISOString() ?? null,
  prefix: record.keyPrefix,
  ...(plaintext !== undefined ? { key: plaintext } : {}),
});
