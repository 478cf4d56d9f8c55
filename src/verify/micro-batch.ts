// Micro-batching: concurrent single verifications of one domain share one SMTP session. A batch
// collects callers for a few milliseconds and keeps collecting while it waits for a host slot,
// until its session takes the recipient list. Callers that give up leave; with nobody left the
// session is cut short.
import { linkSignals } from "./abort.ts";

/** The recipients a domain's session asks: fixed for a group, growing for a batch until taken. */
export interface RecipientSource {
  take(): readonly string[];
}

export interface DomainBatchOptions<R> {
  windowMs: number;
  /** The engine's own shutdown signal. */
  closing: AbortSignal;
  /** Verifies whatever the source holds when the session takes it. */
  run: (source: RecipientSource, signal: AbortSignal) => Promise<Map<string, R>>;
  /** Called once the batch takes no more callers. */
  onClosed: () => void;
}

export class DomainBatch<R> implements RecipientSource {
  private readonly waiting = new Map<string, number>();
  private taken = false;
  private readonly controller = new AbortController();
  /** Results by address, once the batch's session ends. */
  readonly results: Promise<Map<string, R>>;

  constructor(private readonly o: DomainBatchOptions<R>) {
    const linked = linkSignals(this.controller.signal, o.closing);
    this.results = new Promise<void>((resolve) => setTimeout(resolve, o.windowMs))
      .then(() => o.run(this, linked.signal))
      .finally(() => {
        linked.dispose();
        this.close();
      });
  }

  /** Still taking callers. */
  get open(): boolean {
    return !this.taken;
  }

  /** Every caller gave up. */
  get abandoned(): boolean {
    return this.controller.signal.aborted;
  }

  join(address: string): void {
    this.waiting.set(address, (this.waiting.get(address) ?? 0) + 1);
  }

  /** A caller gave up: before the session took the list its address leaves the batch. */
  leave(address: string): void {
    const n = (this.waiting.get(address) ?? 1) - 1;
    if (n > 0) this.waiting.set(address, n);
    else if (!this.taken) this.waiting.delete(address);
    else this.waiting.set(address, 0);
    if ([...this.waiting.values()].every((v) => v === 0)) this.controller.abort();
  }

  take(): readonly string[] {
    this.close();
    return [...this.waiting.keys()];
  }

  private close(): void {
    if (this.taken) return;
    this.taken = true;
    this.o.onClosed();
  }
}
