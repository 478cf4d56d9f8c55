// SMTP_EGRESS: the egress identities probes may leave from. Servers count connections and judge
// reputation per client IP, so each entry gets its own per-server-IP slots (docs/smtp-sessions.md,
// "Egress identities"). An entry is a local source address to bind (an IPv4 or IPv6 literal that
// one of this machine's interfaces carries) or a SOCKS5 proxy URL.
import { isIP } from "node:net";
import { ConfigError } from "./env-vars.ts";

const EXAMPLE = "e.g. SMTP_EGRESS=192.0.2.10,192.0.2.11 or SMTP_EGRESS=socks5://user:pass@proxy.example:1080";

/**
 * The entries of SMTP_EGRESS, in order (empty: one identity, SMTP_PROXY or a direct connection).
 * Throws a ConfigError naming the bad entry.
 */
export function parseEgressList(raw: string | undefined, smtpProxy: string | null): string[] {
  if (raw === undefined || raw.trim() === "") return [];
  const entries = raw.split(",").map((e) => e.trim());
  if (entries.length > 64)
    throw new ConfigError(`SMTP_EGRESS lists ${entries.length.toString()} identities; at most 64`);
  const seen = new Set<string>();
  const out: string[] = [];
  for (const [i, entry] of entries.entries()) {
    if (entry === "")
      throw new ConfigError(`SMTP_EGRESS entry ${(i + 1).toString()} is empty (a stray comma?): ${EXAMPLE}`);
    const value = entry.includes("://") ? checkProxy(entry) : checkAddress(entry);
    const name = value.includes("://") ? proxyName(value) : value;
    if (seen.has(name)) throw new ConfigError(`SMTP_EGRESS lists "${name}" twice`);
    seen.add(name);
    out.push(value);
  }
  if (smtpProxy !== null)
    throw new ConfigError(
      "SMTP_EGRESS and SMTP_PROXY are both set: list the proxy in SMTP_EGRESS (it is one identity among the others) and unset SMTP_PROXY",
    );
  return out;
}

function checkAddress(entry: string): string {
  const address = entry.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (isIP(address) === 0)
    throw new ConfigError(
      `SMTP_EGRESS entry "${entry}" is neither an IP address to bind nor a socks5:// URL: ${EXAMPLE}`,
    );
  if (address === "0.0.0.0" || address === "::")
    throw new ConfigError(
      `SMTP_EGRESS entry "${entry}" is the unspecified address: list the source addresses themselves`,
    );
  return address;
}

function checkProxy(entry: string): string {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    throw new ConfigError(`SMTP_EGRESS entry "${redact(entry)}" is not a valid URL: ${EXAMPLE}`);
  }
  if (url.protocol !== "socks5:" && url.protocol !== "socks5h:")
    throw new ConfigError(
      `SMTP_EGRESS entry "${redact(entry)}" must be a socks5:// URL, got ${url.protocol}`,
    );
  if (url.hostname === "") throw new ConfigError(`SMTP_EGRESS entry "${redact(entry)}" has no host`);
  if (url.pathname !== "" && url.pathname !== "/")
    throw new ConfigError(`SMTP_EGRESS entry "${redact(entry)}" must not have a path`);
  return entry;
}

function proxyName(entry: string): string {
  const url = new URL(entry);
  return `socks5://${url.hostname}:${url.port === "" ? "1080" : url.port}`;
}

/** Credentials never appear in an error message (they end up in logs). */
function redact(entry: string): string {
  return entry.replace(/\/\/[^@/]*@/, "//***@");
}
