/**
 * One probe shared by every caller for `ttlMs`: the first call in a window starts it, the others
 * get the same promise, failures included. For health questions asked per request or per
 * session (is the resolver answering, is the proxy up) that must not become a probe each.
 */
export class SharedProbe<T> {
  private last: { at: number; answer: Promise<T> } | null = null;

  constructor(
    private readonly ttlMs: number,
    private readonly probe: () => Promise<T>,
    private readonly nowMs: () => number,
  ) {}

  get(): Promise<T> {
    const now = this.nowMs();
    if (this.last === null || now - this.last.at > this.ttlMs) this.last = { at: now, answer: this.probe() };
    return this.last.answer;
  }

  /** The next get() probes again. */
  forget(): void {
    this.last = null;
  }
}
