import type { Database, Queryable } from "../db/client.ts";
import {
  deactivateApiKey,
  findApiKeyByHash,
  insertApiKey,
  listApiKeysOfUser,
  touchApiKey,
  type ApiKeyPurpose,
  type ApiKeyRecord,
} from "../db/queries/api-keys.ts";
import { AppError, notFound } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import { safeEqual } from "../lib/tokens.ts";
import { decryptSecret, encryptSecret } from "./key-cipher.ts";
import { generateApiKey, hashApiKey, looksLikeApiKey } from "./key-material.ts";

export const API_KEY_PURPOSES: readonly ApiKeyPurpose[] = ["zapier", "n8n", "google sheets", "custom"];
export type { ApiKeyPurpose, ApiKeyRecord };

export interface CreatedApiKey {
  record: ApiKeyRecord;
  plaintext: string;
}

export interface ApiKeyListing {
  record: ApiKeyRecord;
  /** Only when revealed; null when the stored ciphertext can't be decrypted (key rotated). */
  plaintext?: string | null;
}

export interface ApiKeysService {
  create(userId: string, name: string, purpose: ApiKeyPurpose, q?: Queryable): Promise<CreatedApiKey>;
  list(userId: string, reveal: boolean): Promise<ApiKeyListing[]>;
  deactivate(userId: string, id: string): Promise<void>;
  /** The active key matching the plaintext, or null. */
  authenticate(plaintext: string): Promise<ApiKeyRecord | null>;
}

export function createApiKeysService(
  db: Database,
  clock: Clock,
  encryptionKey: Buffer | null,
): ApiKeysService {
  const requireKey = (): Buffer => {
    if (!encryptionKey) {
      // Without it a created key could never be revealed again; refuse rather than store it unprotected.
      throw new AppError(
        "INTERNAL_ERROR",
        "API key encryption is not configured on this server (ENCRYPTION_KEY)",
      );
    }
    return encryptionKey;
  };

  // last_used_at has minute precision: remember recent touches so the hot auth path rarely writes.
  const touchedAt = new Map<string, number>();
  const touch = (id: string): void => {
    const now = clock.now();
    const last = touchedAt.get(id);
    if (last !== undefined && now.getTime() - last < 60_000) return;
    if (touchedAt.size > 10_000) touchedAt.clear();
    touchedAt.set(id, now.getTime());
    touchApiKey(db, id, now).catch(() => {});
  };

  return {
    async create(userId, name, purpose, q = db) {
      const key = requireKey();
      const id = newId();
      const generated = generateApiKey();
      const record = await insertApiKey(q, {
        id,
        userId,
        name,
        purpose,
        keyHash: generated.hash,
        keyPrefix: generated.prefix,
        keyCiphertext: encryptSecret(key, generated.plaintext, id),
        createdAt: clock.now(),
      });
      return { record, plaintext: generated.plaintext };
    },

    async list(userId, reveal) {
      const records = await listApiKeysOfUser(db, userId);
      if (!reveal) return records.map((record) => ({ record }));
      const key = requireKey();
      return records.map((record) => {
        try {
          return { record, plaintext: decryptSecret(key, record.keyCiphertext, record.id) };
        } catch {
          return { record, plaintext: null };
        }
      });
    },

    async deactivate(userId, id) {
      if (!(await deactivateApiKey(db, userId, id, clock.now()))) throw notFound("API key");
    },

    async authenticate(plaintext) {
      if (!looksLikeApiKey(plaintext)) return null;
      const hash = hashApiKey(plaintext);
      const record = await findApiKeyByHash(db, hash);
      // The index lookup already matched the hash; the constant-time re-check keeps the decision
      // itself free of early-exit timing.
      if (!record || !safeEqual(record.keyHash, hash) || !record.isActive) return null;
      touch(record.id);
      return record;
    },
  };
}
