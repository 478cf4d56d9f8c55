// Egress identities: which ways out a session may take, whom a rest is about, and which replies
// send an identity to rest. Servers count connections and judge reputation per client IP, so a
// list of source addresses (or proxies) multiplies what an installation may verify, as long as
// each identity keeps its own slots and steps aside where it is blocked or throttled.
import { getDomain } from "tldts";
import { detectServerType } from "../providers.ts";
import type { ConnectPort, EgressIdentity, RestReason } from "../ports.ts";
import { createDirectConnect } from "./connect.ts";
import { limitScope } from "./limit-scope.ts";
import { classifyReply } from "./replies.ts";
import type { SmtpReply } from "./reply-reader.ts";
import { createSocksConnect, parseSocksUrl } from "./socks-connect.ts";

/** The name of the single identity of a deployment without SMTP_EGRESS. */
export const DEFAULT_EGRESS = "";

/**
 * The identities of SMTP_EGRESS entries (validated by config/): a source address is bound with
 * `localAddress`; a socks5:// URL is a proxy, named without its credentials. None: `fallback`
 * alone (SMTP_PROXY or a direct connection), as before identities existed.
 */
export function egressIdentities(
  specs: readonly string[],
  connectTimeoutMs: number,
  fallback: ConnectPort,
): EgressIdentity[] {
  if (specs.length === 0) return [{ id: DEFAULT_EGRESS, connect: fallback }];
  return specs.map((spec) => ({
    id: egressName(spec),
    connect: isProxySpec(spec) ? createSocksConnect(spec, connectTimeoutMs) : createDirectConnect(spec),
  }));
}

export function isProxySpec(spec: string): boolean {
  return /^socks5h?:\/\//i.test(spec);
}

/** An identity's name in slots, rests and logs: the address, or the proxy URL without credentials. */
export function egressName(spec: string): string {
  if (!isProxySpec(spec)) return spec;
  const proxy = parseSocksUrl(spec);
  const host = proxy.host.includes(":") ? `[${proxy.host}]` : proxy.host;
  return `socks5://${host}:${proxy.port.toString()}`;
}

/**
 * Whom a rest is about. The grain at which providers judge a client IP is the provider, not
 * one of its server IPs: Gmail's throttling of an IP holds on every gmail-smtp-in address, and a
 * blocklist consulted by one front end is consulted by its siblings. So: the provider the MX
 * name belongs to when it is a known one (Google serves MX from google.com and googlemail.com),
 * else the MX name's registrable domain (mx1.acme.example → acme.example), else (no name) the
 * server IP itself.
 */
export function providerOf(hostName: string | null, address: string): string {
  if (hostName === null || hostName === "") return address;
  const name = hostName.toLowerCase().replace(/\.$/, "");
  const type = detectServerType([name]);
  if (type !== "unknown") return type;
  // The Public Suffix List's ICANN section (tldts), not a guess from label lengths: co.uk and
  // com.au are suffixes, ab.de is not. Private suffixes are left out: a hosting platform's
  // customers share its MX front ends, so they are one provider. A name under an unlisted TLD
  // (our simulator's .test) counts its last label as the suffix, the list's default rule.
  return getDomain(name, { allowPrivateDomains: false }) ?? name;
}

/**
 * The rest a reply calls for: a blocklist or a throttle aimed at our IP (a 554 "blocked using
 * zen.spamhaus.org" banner, "421 4.7.0 Too many connections from 127.0.0.2"). Null for anything
 * about a mailbox, or when there is nothing to classify.
 */
export function restReasonOf(reply: SmtpReply | undefined): RestReason | null {
  if (reply === undefined) return null;
  // "450 4.2.1 The user you are trying to contact is receiving mail too quickly" is that mailbox's.
  if (reply.code < 500 && limitScope(reply) !== "client") return null;
  const verdict = classifyReply(reply);
  if (verdict.kind !== "unknown") return null;
  if (verdict.reason === "ip_blocklisted" || verdict.reason === "rate_limited") return verdict.reason;
  return null;
}
