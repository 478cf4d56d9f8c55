import { Type } from "typebox";
import type { ApiKeyListing, CreatedApiKey } from "../../keys/service.ts";
import { DateTime, documented, ref, Uuid } from "./common.ts";
import { ApiKeyPurposeSchema } from "./enums.ts";

/**
 * The purpose a request body may name, as ajv checks it: a union of literals, whose failure
 * errors.ts words "must be one of zapier, n8n, …" (an enum's would be "must be equal to one of the
 * allowed values"). The document shows the `ApiKeyPurpose` component instead (CreateApiKeyBodyDocumented).
 */
export const PurposeInput = Type.Union(
  [Type.Literal("zapier"), Type.Literal("n8n"), Type.Literal("google sheets"), Type.Literal("custom")],
  { description: "Integration the key is for" },
);

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    purpose: PurposeInput,
  },
  { additionalProperties: false },
);

export const CreateApiKeyBodyDocumented = documented(CreateApiKeyBody, {
  purpose: ref(ApiKeyPurposeSchema),
});

const Purpose = ref(ApiKeyPurposeSchema);

export const CreatedApiKeyReply = Type.Object(
  {
    id: Uuid,
    user_id: Uuid,
    key: Type.String({ description: "Plaintext key, shown once (also via GET ?reveal=true)" }),
    name: Type.String(),
    purpose: Purpose,
    created_at: DateTime,
  },
  { $id: "CreatedApiKey", description: "A new API key, with its plaintext secret" },
);

export const ListApiKeysQuery = Type.Object(
  {
    reveal: Type.Optional(
      Type.Boolean({ default: false, description: "Include each active key's plaintext `key`" }),
    ),
  },
  { additionalProperties: false },
);

export const ApiKeyListItem = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    purpose: Purpose,
    is_active: Type.Boolean({ description: "false once deleted (deactivated)" }),
    created_at: DateTime,
    last_used_at: Type.Union([DateTime, Type.Null()]),
    prefix: Type.String({ description: "The key's visible start, to recognise it" }),
    key: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description:
          "Only with reveal=true, for active keys: the plaintext (null if it can no longer be decrypted)",
      }),
    ),
  },
  { $id: "ApiKey", description: "An API key as listed (no secret unless revealed)" },
);

export const ListApiKeysReply = Type.Object(
  { api_keys: Type.Array(ref(ApiKeyListItem)) },
  { $id: "ApiKeyList", description: "The caller's API keys" },
);

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
