// TRUST_PROXY: the reverse proxies whose X-Forwarded-For we believe. A client writes whatever it
// likes into that header; a proxy appends the address it saw. So the client's address is the
// rightmost entry not added by one of OUR proxies, and that needs the list of our proxies: "trust
// every hop" (the old boolean) took the leftmost, client-written entry, so a client could pose as
// any address (the operator's, to lock them out; a new one per request, to dodge the failed-login
// limit). Entries are handed to Fastify's trustProxy (proxy-addr).
import { isIP } from "node:net";
import { ConfigError } from "./env-vars.ts";

/** proxy-addr's named ranges: 127.0.0.0/8 and ::1; 169.254.0.0/16 and fe80::/10; 10/8, 172.16/12, 192.168/16 and fc00::/7. */
const NAMED = new Set(["loopback", "linklocal", "uniquelocal"]);
const EXAMPLE =
  "e.g. TRUST_PROXY=loopback (nginx or Caddy on this host), TRUST_PROXY=10.0.0.5,10.0.0.6 or TRUST_PROXY=10.0.0.0/24";
const MAX_ENTRIES = 64;

/** The trusted proxies (empty: trust no X-Forwarded-* header). Throws a ConfigError naming the bad entry. */
export function parseTrustProxy(raw: string | undefined): string[] {
  const value = raw?.trim() ?? "";
  if (value === "" || /^(?:false|0|no|off)$/i.test(value)) return [];
  if (/^(?:true|1|yes|on)$/i.test(value))
    throw new ConfigError(
      `TRUST_PROXY=${value} would believe an X-Forwarded-For any client writes; list your proxies' addresses instead: ${EXAMPLE}`,
    );
  const entries = value.split(",").map((e) => e.trim());
  if (entries.length > MAX_ENTRIES)
    throw new ConfigError(
      `TRUST_PROXY lists ${entries.length.toString()} entries; at most ${MAX_ENTRIES.toString()}`,
    );
  return entries.map((entry, i) => {
    if (entry === "")
      throw new ConfigError(`TRUST_PROXY entry ${(i + 1).toString()} is empty (a stray comma?): ${EXAMPLE}`);
    const problem = entryProblem(entry.toLowerCase());
    if (problem !== null) throw new ConfigError(`TRUST_PROXY entry "${entry}" ${problem}: ${EXAMPLE}`);
    return entry.toLowerCase();
  });
}

/** Why an entry is neither a named range, an address nor a CIDR range; null when it is one. */
function entryProblem(entry: string): string | null {
  if (NAMED.has(entry)) return null;
  const [address = "", prefix, extra] = entry.split("/");
  if (extra !== undefined) return "has two prefix lengths";
  const family = isIP(address);
  if (family === 0) return "is neither an IP address, a CIDR range nor loopback/linklocal/uniquelocal";
  if (prefix === undefined) return null;
  const bits = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits)
    return `has a prefix length outside 0–${bits.toString()}`;
  return null;
}
