import { LRUCache } from "lru-cache";
import type { InvalidationBus } from "../db/invalidation-bus.ts";
import type { ApiKeyRecord } from "../db/queries/api-keys.ts";

/**
 * How long "is the key behind this session still active?" is remembered per key id. A revoked
 * key's sessions stop within this time on every process (at once on the one that revoked it).
 */
const SESSION_KEY_CHECK_TTL_MS = 1_000;

export interface ApiKeyCacheOptions {
  /** Announces deactivations to every node; without it nothing is cached (one-shot CLI). */
  bus: InvalidationBus;
  /** How long an authenticated key is remembered (AUTH_CACHE_TTL_MS; 0 = never). */
  ttlMs: number;
  /** Most keys remembered at once. */
  maxEntries?: number;
}

interface Liveness {
  userId: string;
  active: boolean;
}

/**
 * This node's memory of keys: key hash → active key, so a request with a known key costs no
 * query, and session → key (or user) liveness, so a session request costs none most of the time.
 * A deactivation reaches every node through the bus at once; the TTL only bounds what a lost
 * message could keep alive, and while the bus is down (`live` false) the key cache is neither
 * read nor filled.
 */
export class KeyCaches {
  private readonly bus: InvalidationBus | undefined;
  private readonly keys: LRUCache<string, ApiKeyRecord> | null;
  private readonly live = new Map<string, Liveness & { at: number }>();
  // Grows with every message that may concern a key: a fill that read the key before one arrived
  // may hold what it invalidated, so it is not stored.
  private epoch = 0;

  constructor(options: ApiKeyCacheOptions | undefined) {
    this.bus = options?.bus;
    this.keys =
      this.bus && options!.ttlMs > 0
        ? new LRUCache<string, ApiKeyRecord>({ max: options!.maxEntries ?? 10_000, ttl: options!.ttlMs })
        : null;
    this.bus?.on((m) => {
      if (m === null) {
        this.epoch++;
        this.live.clear();
        this.keys?.clear();
      } else if (m.kind === "api_key") {
        this.epoch++;
        this.forget(m.id);
      }
    });
  }

  /** The active key of this hash if remembered (and the bus is live). */
  authenticated(hash: string): ApiKeyRecord | undefined {
    return this.keys !== null && this.bus!.live ? this.keys.get(hash) : undefined;
  }

  /**
   * Starts a read of a key for the cache: the returned fill stores what was read, unless the bus
   * went down or an invalidation arrived during the read (it may be about this very key).
   */
  beginFill(): (hash: string, record: ApiKeyRecord) => void {
    const useCache = this.keys !== null && this.bus!.live;
    const epoch = this.epoch;
    return (hash, record) => {
      if (useCache && this.bus!.live && this.epoch === epoch) this.keys.set(hash, record);
    };
  }

  /** A key's (or user's) liveness, read again when older than SESSION_KEY_CHECK_TTL_MS. */
  async liveness(id: string, read: () => Promise<Liveness>): Promise<Liveness> {
    const now = Date.now();
    let entry = this.live.get(id);
    if (!entry || now - entry.at >= SESSION_KEY_CHECK_TTL_MS) {
      entry = { ...(await read()), at: now };
      if (this.live.size > 10_000) this.live.clear();
      this.live.set(id, entry);
    }
    return entry;
  }

  /** A key this node revoked: forgotten here at once (the bus tells the other nodes). */
  revoked(id: string): void {
    if (this.bus) this.bus.applyLocally({ kind: "api_key", id });
    else this.forget(id);
  }

  private forget(id: string): void {
    this.live.delete(id);
    if (!this.keys) return;
    for (const [hash, record] of this.keys.entries()) if (record.id === id) this.keys.delete(hash);
  }
}
