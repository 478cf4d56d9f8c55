import type { Database, Queryable, Transaction } from "../db/client.ts";
import { announceInvalidation } from "../db/invalidation-bus.ts";
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
import { KeyCaches, type ApiKeyCacheOptions } from "./key-caches.ts";
import { generateApiKey, hashApiKey, looksLikeApiKey } from "./key-material.ts";

export { API_KEY_PURPOSES } from "./purposes.ts";

/** Most active keys one user may hold (DESIGN §5 "Key scopes"): creating one more → 409 CONFLICT. */
export const MAX_ACTIVE_KEYS_PER_USER = 50;

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

export type { ApiKeyCacheOptions };

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
  return new ApiKeys(db, clock, encryptionKey, new KeyCaches(cacheOptions), onRevoked);
}

class ApiKeys implements ApiKeysService {
  // last_used_at has minute precision: remember recent touches so the hot auth path rarely writes.
  private readonly touchedAt = new Map<string, number>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly encryptionKey: Buffer | null,
    private readonly caches: KeyCaches,
    private readonly onRevoked: OnKeysRevoked,
  ) {}

  async create(userId: string, name: string, purpose: ApiKeyPurpose, q?: Queryable): Promise<CreatedApiKey> {
    // Inside the caller's transaction when given one (users.create), else in a transaction of its own.
    return q
      ? this.insert(q, userId, name, purpose)
      : this.db.transaction((tx) => this.insert(tx, userId, name, purpose));
  }

  async list(userId: string, reveal: boolean): Promise<ApiKeyListing[]> {
    const records = await listApiKeysOfUser(this.db, userId);
    if (!reveal) return records.map((record) => ({ record }));
    const key = this.requireKey();
    return records.map((record) => {
      if (!record.isActive) return { record };
      try {
        return { record, plaintext: decryptSecret(key, record.keyCiphertext, record.id) };
      } catch {
        return { record, plaintext: null };
      }
    });
  }

  async deactivate(userId: string, id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      await lockKeyOwner(tx, userId);
      const record = await findApiKeyById(tx, id);
      if (!record || record.userId !== userId) throw notFound("API key");
      if (record.isActive && (await countActiveApiKeysOfUser(tx, userId)) <= 1)
        throw conflict(
          "This is the user's last active API key: without it no request could authenticate. " +
            "Create another key first, then delete this one",
        );
      const at = this.clock.now();
      await deactivateApiKey(tx, userId, id, at);
      await this.onRevoked(tx, userId, [id], at);
      // Always announced, also from a one-shot CLI without caches: running nodes have the key cached.
      await announceInvalidation(tx, { kind: "api_key", id });
    });
    this.caches.revoked(id);
  }

  async authenticate(plaintext: string): Promise<ApiKeyRecord | null> {
    if (!looksLikeApiKey(plaintext)) return null;
    const hash = hashApiKey(plaintext);
    const hit = this.caches.authenticated(hash);
    if (hit) {
      this.touch(hit.id);
      return hit;
    }
    const fill = this.caches.beginFill();
    const record = await findApiKeyByHash(this.db, hash);
    // The index lookup already matched the hash; the constant-time re-check keeps the decision
    // itself free of early-exit timing.
    if (!record || !safeEqual(record.keyHash, hash) || !record.isActive) return null;
    fill(hash, record);
    this.touch(record.id);
    return record;
  }

  isActiveKeyOf(userId: string, id: string): Promise<boolean> {
    return this.caches
      .liveness(id, async () => {
        const record = await findApiKeyById(this.db, id);
        return { userId: record?.userId ?? "", active: record?.isActive ?? false };
      })
      .then((entry) => entry.active && entry.userId === userId);
  }

  isActiveUser(userId: string): Promise<boolean> {
    return this.caches
      .liveness(`user:${userId}`, async () => ({
        userId,
        active: !(await isUserDeactivated(this.db, userId)),
      }))
      .then((entry) => entry.active);
  }

  private requireKey(): Buffer {
    if (!this.encryptionKey) {
      // Without it a created key could never be revealed again; refuse rather than store it unprotected.
      throw new AppError(
        "INTERNAL_ERROR",
        "API key encryption is not configured on this server (ENCRYPTION_KEY)",
      );
    }
    return this.encryptionKey;
  }

  private touch(id: string): void {
    const now = this.clock.now();
    const last = this.touchedAt.get(id);
    if (last !== undefined && now.getTime() - last < 60_000) return;
    if (this.touchedAt.size > 10_000) this.touchedAt.clear();
    this.touchedAt.set(id, now.getTime());
    touchApiKey(this.db, id, now).catch(() => {});
  }

  private async insert(
    q: Queryable,
    userId: string,
    name: string,
    purpose: ApiKeyPurpose,
  ): Promise<CreatedApiKey> {
    const key = this.requireKey();
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
      createdAt: this.clock.now(),
    });
    return { record, plaintext: generated.plaintext };
  }
}
