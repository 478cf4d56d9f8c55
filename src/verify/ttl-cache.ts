// A small bounded map whose entries expire: DNS facts, PTR answers and catch-all verdicts.
// Per engine instance, so two engines (tests, tenants) never see each other's facts.

/** Entries are dropped on read once `ttlMs` has passed; the oldest go first past `maxEntries`. */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; expiresAtMs: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly nowMs: () => number,
    private readonly maxEntries = 50_000,
  ) {}

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAtMs <= this.nowMs()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: K, value: V): void {
    if (this.ttlMs <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAtMs: this.nowMs() + this.ttlMs });
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  }

  clear(): void {
    this.entries.clear();
  }
}
