import { isIP } from "node:net";
import { blockedAddressRange } from "../net/address-policy.ts";

/** Longest webhook URL accepted; receivers' URLs are short, this only bounds storage and logs. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/** The host of a parsed URL without IPv6 brackets or a trailing root dot, lowercased. */
export const bareHostname = (url: URL): string =>
  url.hostname
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")
    .toLowerCase();

/**
 * For API input: absolute http(s) URL, no credentials, and — unless allowPrivate — not a literal
 * loopback/private/link-local/metadata IP (nor "localhost"). Returns a reason string or null.
 *
 * Only literals can be judged here: a hostname may resolve anywhere and may change its answer, so
 * the dispatcher checks every resolved address again at delivery time (address-policy.ts).
 * WHATWG URL parsing already normalises the obfuscated IPv4 forms (http://2130706433/,
 * http://0x7f.1/, http://127.1/ all become 127.0.0.1), so they cannot slip past the literal check.
 */
export function webhookUrlProblem(url: string, allowPrivate: boolean): string | null {
  if (url.length > MAX_WEBHOOK_URL_LENGTH) return `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "must be an absolute URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return "must use http or https";
  if (parsed.username !== "" || parsed.password !== "") return "must not contain credentials";
  const host = bareHostname(parsed);
  if (host === "") return "must have a host";
  if (allowPrivate) return null;
  // RFC 6761: localhost and every name under it are loopback, whatever DNS says.
  if (host === "localhost" || host.endsWith(".localhost")) return "must not point to localhost";
  if (isIP(host) !== 0 && blockedAddressRange(host) !== null) {
    return "must not point to a loopback, private or link-local address";
  }
  return null;
}
