// SMTP_EGRESS: the egress identities probes may leave from. Servers count connections and judge
// reputation per client IP, so each entry gets its own per-server-IP slots (docs/smtp-sessions.md,
// "Egress identities"). An entry is a local source address to bind (an IPv4 or IPv6 literal that
// one of this machine's interfaces carries) or a SOCKS5 proxy URL.
import { createServer, isIP } from "node:net";
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
    const value = entry.includes("://") ? checkProxyUrl(`SMTP_EGRESS entry`, entry) : checkAddress(entry);
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

/**
 * A SOCKS5 proxy URL (SMTP_EGRESS entries, SMTP_PROXY), or a ConfigError that names `what` and
 * the URL without its credentials. Only SOCKS5 (socks5://, socks5h://) is spoken
 * (verify/smtp/socks-connect.ts): a socks:// or socks4:// URL is refused here, not at the
 * first probe.
 */
export function checkProxyUrl(what: string, entry: string): string {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    throw new ConfigError(
      `${what} "${redact(entry)}" is not a valid URL (percent-encode / @ : in the user or password): ${EXAMPLE}`,
    );
  }
  if (url.protocol !== "socks5:" && url.protocol !== "socks5h:")
    throw new ConfigError(`${what} "${redact(entry)}" must be a socks5:// URL, got ${url.protocol}`);
  if (url.hostname === "") throw new ConfigError(`${what} "${redact(entry)}" has no host`);
  if (url.pathname !== "" && url.pathname !== "/")
    throw new ConfigError(`${what} "${redact(entry)}" must not have a path`);
  return entry;
}

function proxyName(entry: string): string {
  const url = new URL(entry);
  return `socks5://${url.hostname}:${url.port === "" ? "1080" : url.port}`;
}

/**
 * Credentials never appear in an error message (they end up in logs): everything between the
 * scheme and the last "@" goes, whatever it holds (a password may contain "/", "?" or "#").
 */
export function redact(entry: string): string {
  const start = entry.indexOf("//");
  const at = entry.lastIndexOf("@");
  return start === -1 || at < start ? entry : `${entry.slice(0, start + 2)}***${entry.slice(at)}`;
}

/**
 * The SMTP_EGRESS addresses this machine cannot bind (EADDRNOTAVAIL: no interface carries them).
 * Checked at start by binding a throwaway socket to each: a missing address would otherwise turn
 * every probe from it into `unknown / connection_failed`, blamed on the mail servers.
 */
export async function unbindableEgressAddresses(entries: readonly string[]): Promise<string[]> {
  const missing: string[] = [];
  for (const entry of entries) {
    if (entry.includes("://")) continue;
    if (!(await canBind(entry))) missing.push(entry);
  }
  return missing;
}

/** Refuses to start, naming them, when SMTP_EGRESS lists addresses this machine does not have. */
export async function assertEgressBindable(entries: readonly string[]): Promise<void> {
  const missing = await unbindableEgressAddresses(entries);
  if (missing.length === 0) return;
  throw new ConfigError(
    `SMTP_EGRESS lists ${missing.map((a) => `"${a}"`).join(", ")}, which no interface of this machine carries (binding failed): add the address to an interface (ip addr add …) or remove it from SMTP_EGRESS`,
  );
}

function canBind(address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host: address, port: 0, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
