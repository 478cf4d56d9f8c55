import { LRUCache } from "lru-cache";
import type { Database, Queryable, Transaction } from "../db/client.ts";
import { announceInvalidation, type InvalidationBus } from "../db/invalidation-bus.ts";
import {
  countActiveApiKeysOfUser,
  deactivateApiKey,
  findApiKeyByHash,
  findApiKeyById,
  insertApiKey,
  listApiKeysOfUser,
  lockKeyOwner,
  touchApiKey,
  type ApiKeyPurpose,
  type ApiKeyRecord,
} from "../db/queries/api-keys.ts";
import { isUserDeactivated } from "../db/queries/operator-users.ts";
import { AppError, conflict, notFound } from "../lib/app-error.ts";
import type { Clock } from "../lib/clock.ts";
import { newId } from "../lib/ids.ts";
import { safeEqual } from "../lib/tokens.ts";
import { decryptSecret, encryptSecret } from "../lib/secret-box.ts";
import { generateApiKey, hashApiKey, looksLikeApiKey } from "./key-material.ts";

export { API_KEY_PURPOSES } from "./purposes.ts";

/** Most active keys one user may hold (DESIGN §5 "Key scopes"): creating one more → 409 CONFLICT. */
export const MAX_ACTIVE_KEYS_PER_USER = 50;

/**
 * How long "is the key behind this session still active?" is remembered per key id. A revoked
 * key's sessions stop within this time on every process (at once on the one that revoked it).
 */
export const SESSION_KEY_CHECK_TTL_MS = 1_000;
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
  /** With reveal, active keys carry their plaintext; a deactivated key's is never returned. */
  list(userId: string, reveal: boolean): Promise<ApiKeyListing[]>;
  /** Deactivates (idempotent); refuses the user's last active key (409 CONFLICT). */
  deactivate(userId: string, id: string): Promise<void>;
  /** The active key matching the plaintext, or null. */
  authenticate(plaintext: string): Promise<ApiKeyRecord | null>;
  /** Is this key active and the user's? Cached for SESSION_KEY_CHECK_TTL_MS (checked per session request). */
  isActiveKeyOf(userId: string, id: string): Promise<boolean>;
  /**
   * Is the user not deactivated by an operator? For sessions opened without a key (an
   * external JWT); cached like isActiveKeyOf. A key's own liveness already implies its user's.
   */
  isActiveUser(userId: string): Promise<boolean>;
}

export interface ApiKeyCacheOptions {
  /** Announces deactivations to every node; without it nothing is cached (one-shot CLI). */
  bus: InvalidationBus;
  /** How long an authenticated key is remembered (AUTH_CACHE_TTL_MS; 0 = never). */
  ttlMs: number;
  /** Most keys remembered at once. */
  maxEntries?: number;
}

/**
 * Called in the transaction that revokes keys, with the key owner's row locked: ends the work
 * the keys started (tasks/stop-work.ts, wired by the composition root).
 */
export type OnKeysRevoked = (
  tx: Transaction,
  userId: string,
  keyIds: readonly string[],
  at: Date,
) => Promise<void>;

export function createApiKeysService(
  db: Database,
  clock: Clock,
  encryptionKey: Buffer | null,
  cacheOptions?: ApiKeyCacheOptions,
  onRevoked: OnKeysRevoked = async () => {},
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

  // Session → key liveness, remembered briefly so a session request costs no query most of the time.
  const liveness = new Map<string, { userId: string; active: boolean; at: number }>();
  // Key hash → active key, so a request with a known key costs no query. A deactivation reaches
  // every node through the bus at once; the TTL only bounds what a lost message could keep alive,
  // and while the bus is down (`live` false) this cache is neither read nor filled.
  const bus = cacheOptions?.bus;
  const authenticated =
    bus && cacheOptions.ttlMs > 0
      ? new LRUCache<string, ApiKeyRecord>({
          max: cacheOptions.maxEntries ?? 10_000,
          ttl: cacheOptions.ttlMs,
        })
      : null;
  const forget = (id: string): void => {
    liveness.delete(id);
    if (!authenticated) return;
    for (const [hash, record] of authenticated.entries()) if (record.id === id) authenticated.delete(hash);
  };
  // Grows with every message that may concern a key: a fill that read the key before one arrived
  // may hold what it invalidated, so it is not stored.
  let keyEpoch = 0;
  bus?.on((m) => {
    if (m === null) {
      keyEpoch++;
      liveness.clear();
      authenticated?.clear();
    } else if (m.kind === "api_key") {
      keyEpoch++;
      forget(m.id);
    }
  });

  const insert = async (q: Queryable, userId: string, name: string, purpose: ApiKeyPurpose) => {
    const key = requireKey();
    if (!(await lockKeyOwner(q, userId))) throw notFound("User");
    if (await isUserDeactivated(q, userId)) throw conflict("This user is deactivated: no key can be created");
    if ((await countActiveApiKeysOfUser(q, userId)) >= MAX_ACTIVE_KEYS_PER_USER)
      throw conflict(
        `A user may hold at most ${MAX_ACTIVE_KEYS_PER_USER} active API keys; delete one before creating another`,
      );
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
  };

  return {
    async create(userId, name, purpose, q) {
      // Inside the caller's transaction when given one (users.create), else in a transaction of its own.
      return q ? insert(q, userId, name, purpose) : db.transaction((tx) => insert(tx, userId, name, purpose));
    },

    async list(userId, reveal) {
      const records = await listApiKeysOfUser(db, userId);
      if (!reveal) return records.map((record) => ({ record }));
      const key = requireKey();
      return records.map((record) => {
        if (!record.isActive) return { record };
        try {
          return { record, plaintext: decryptSecret(key, record.keyCiphertext, record.id) };
        } catch {
          return { record, plaintext: null };
        }
      });
    },

    async deactivate(userId, id) {
      await db.transaction(async (tx) => {
        await lockKeyOwner(tx, userId);
        const record = await findApiKeyById(tx, id);
        if (!record || record.userId !== userId) throw notFound("API key");
        if (record.isActive && (await countActiveApiKeysOfUser(tx, userId)) <= 1)
          throw conflict(
            "This is the user's last active API key: without it no request could authenticate. " +
              "Create another key first, then delete this one",
          );
        const at = clock.now();
        await deactivateApiKey(tx, userId, id, at);
        await onRevoked(tx, userId, [id], at);
        // Always announced, also from a one-shot CLI without caches: running nodes have the key cached.
        await announceInvalidation(tx, { kind: "api_key", id });
      });
      if (bus) bus.applyLocally({ kind: "api_key", id });
      else forget(id);
    },

    async authenticate(plaintext) {
      if (!looksLikeApiKey(plaintext)) return null;
      const hash = hashApiKey(plaintext);
      const useCache = authenticated !== null && bus!.live;
      const hit = useCache ? authenticated.get(hash) : undefined;
      if (hit) {
        touch(hit.id);
        return hit;
      }
      const epoch = keyEpoch;
      const record = await findApiKeyByHash(db, hash);
      // The index lookup already matched the hash; the constant-time re-check keeps the decision
      // itself free of early-exit timing.
      if (!record || !safeEqual(record.keyHash, hash) || !record.isActive) return null;
      // Not stored when an invalidation arrived during the read: it may be about this very key.
      if (useCache && bus!.live && keyEpoch === epoch) authenticated.set(hash, record);
      touch(record.id);
      return record;
    },

    async isActiveKeyOf(userId, id) {
      const now = Date.now();
      let entry = liveness.get(id);
      if (!entry || now - entry.at >= SESSION_KEY_CHECK_TTL_MS) {
        const record = await findApiKeyById(db, id);
        entry = { userId: record?.userId ?? "", active: record?.isActive ?? false, at: now };
        if (liveness.size > 10_000) liveness.clear();
        liveness.set(id, entry);
      }
      return entry.active && entry.userId === userId;
    },

    async isActiveUser(userId) {
      const now = Date.now();
      const cacheKey = `user:${userId}`;
      let entry = liveness.get(cacheKey);
      if (!entry || now - entry.at >= SESSION_KEY_CHECK_TTL_MS) {
        entry = { userId, active: !(await isUserDeactivated(db, userId)), at: now };
        if (liveness.size > 10_000) liveness.clear();
        liveness.set(cacheKey, entry);
      }
      return entry.active;
    },
  };
}
