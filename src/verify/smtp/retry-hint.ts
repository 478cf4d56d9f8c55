// When a temporary refusal says when to come back. Greylisting servers often do ("try again in
// 300 seconds", "please retry after 5 minutes"); postgrey's stock text does not, but its stock
// delay is 300 s, so its wording implies the hint. Pure: reply text in, milliseconds out.
import type { SmtpReply } from "./reply-reader.ts";

// postgrey's default --delay (postgrey(8)): a retry after it passes.
const POSTGREY_DEFAULT_DELAY_MS = 300_000;
// A hint beyond this is not a greylisting window we will wait for in one retry.
const MAX_HINT_MS = 6 * 3_600_000;

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000 };

// "try again in 300 seconds", "retry in 5 minutes", "please retry after 60s",
// "wait 120 seconds", "Greylisted for 5 minutes", "come back in 10 min"
const HINT =
  /\b(?:again|retry|wait|come back|greylisted|deferred|delayed)\b[^\d\n]{0,30}?(\d{1,6})\s*(s|sec(?:ond)?s?|m|min(?:ute)?s?|h|hours?)\b/i;
const POSTGREY = /postgrey/i;

/** Milliseconds the server asks us to wait before retrying, or null when it gives no hint. */
export function retryHintMs(reply: SmtpReply): number | null {
  if (reply.code < 400 || reply.code >= 500) return null;
  const m = HINT.exec(reply.text);
  if (m !== null) {
    const unit = (m[2] ?? "s").toLowerCase().startsWith("h")
      ? "h"
      : (m[2] ?? "s").toLowerCase().startsWith("m")
        ? "m"
        : "s";
    const ms = Number(m[1]) * (UNIT_MS[unit] ?? 1_000);
    return ms > 0 && ms <= MAX_HINT_MS ? ms : null;
  }
  if (POSTGREY.test(reply.text)) return POSTGREY_DEFAULT_DELAY_MS;
  return null;
}
