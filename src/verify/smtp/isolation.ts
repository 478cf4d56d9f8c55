// Bisection: which recipient made the server close the connection. A 421 to one RCPT names it;
// a drop leaves the recipients of the cut write as suspects, asked half as many at a time until
// one stands alone. The culprit is set aside and asked once more, alone, at the end.
import { MAX_ISOLATED, type ContinueEnd, type SessionReport } from "./session-types.ts";

/** Recipients suspected of closing the connection, and the write size that narrows them down. */
export interface Isolation {
  suspects: Set<string>;
  /** Most suspects per write while any is unanswered. */
  cap: number;
}

/**
 * What a closed connection says about its culprit: a 421 to one RCPT names it; a drop with one
 * recipient unanswered in the write names it too; a drop with several leaves them suspects, and
 * the next writes take half of them at a time.
 */
export function isolate(
  end: ContinueEnd,
  report: SessionReport,
  isolation: Isolation,
): "isolated" | "narrowed" | "none" | "too_many" {
  const unanswered = (end.inFlight ?? []).filter((a) => !report.replies.has(a));
  const culprit =
    end.culprit ?? (end.why === "dropped" && unanswered.length === 1 ? unanswered[0] : undefined);
  if (culprit !== undefined) {
    if (report.isolated.includes(culprit)) return "none";
    if (report.isolated.length >= MAX_ISOLATED) return "too_many";
    report.isolated.push(culprit);
    isolation.suspects.delete(culprit);
    if (isolation.suspects.size === 0) isolation.cap = Infinity;
    return "isolated";
  }
  if (end.why === "dropped" && unanswered.length > 1) {
    const cap = Math.ceil(unanswered.length / 2);
    if (cap >= isolation.cap) return "none";
    isolation.suspects = new Set(unanswered);
    isolation.cap = cap;
    return "narrowed";
  }
  return "none";
}

/**
 * The next write's recipients: while a drop's suspects are unanswered they go a few at a time;
 * once none is left the bisection is over.
 */
export function nextChunk(queue: readonly string[], size: number, isolation: Isolation): string[] {
  const capped = queue.some((a) => isolation.suspects.has(a));
  if (!capped) {
    isolation.suspects.clear();
    isolation.cap = Infinity;
  }
  return queue.slice(0, capped ? Math.min(size, isolation.cap) : size);
}
