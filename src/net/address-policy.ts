import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

// THE outbound address guard (DESIGN.md §5 "Outbound guard"): webhooks (deliver.ts, url-policy.ts)
// and SMTP hosts ask it whether an address may be connected to. A pure function of the address:
// no config, no I/O; the callers apply WEBHOOK_ALLOW_PRIVATE / SMTP_ALLOW_PRIVATE_HOSTS.
//
// The range table is ipaddr.js's (IANA special-purpose registries, kept up to date there), and
// only its "unicast" range is public. On top of it:
// - IPv6 forms that carry an IPv4 address — IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
//   (::ffff:0:a.b.c.d), NAT64 (64:ff9b::a.b.c.d), 6to4 (2002:AABB:CCDD::) and Teredo (server and
//   client) — reach that IPv4 address through the stack, a translator or a tunnel, so they are
//   public only when the embedded IPv4 is; a refusal names both ("6to4:private").
// - Ranges whose embedded IPv4 cannot be trusted are refused outright: the deprecated
//   IPv4-compatible ::a.b.c.d (RFC 4291; nothing public lives there, a sit tunnel would carry it)
//   and the NAT64 local-use prefix 64:ff9b:1::/48 (RFC 8215: the operator picks the prefix length,
//   so where the IPv4 sits is unknowable).
// - IPv6 outside 2000::/3 that ipaddr.js still calls "unicast" is "reserved": IANA allocates
//   global unicast only from 2000::/3.

/** The verdict on one address: `public` (a webhook or an SMTP probe may connect) and its range. */
export interface AddressClass {
  public: boolean;
  /**
   * ipaddr.js's range name ("unicast", "private", "loopback", "linkLocal", "carrierGradeNat",
   * "uniqueLocal", "reserved", "6to4", …); "outer:inner" when an embedded IPv4 decided a refusal
   * ("ipv4Mapped:loopback", "teredo:private"); "invalid" for anything that is not an IP address.
   */
  range: string;
}

const INVALID: AddressClass = { public: false, range: "invalid" };

const NAT64_WELL_KNOWN = ipaddr.parseCIDR("64:ff9b::/96");
const GLOBAL_UNICAST = ipaddr.parseCIDR("2000::/3");
const IPV4_COMPATIBLE = ipaddr.parseCIDR("::/96");

/** The IPv4 address in two 16-bit groups. */
const ipv4Of = (hi: number, lo: number): ipaddr.IPv4 =>
  new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

function classifyIpv4(address: ipaddr.IPv4): AddressClass {
  const range = address.range();
  return { public: range === "unicast", range };
}

/** `outer` is as public as every IPv4 address it embeds; the first non-public one names the refusal. */
function judgedByEmbedded(outer: string, embedded: readonly ipaddr.IPv4[]): AddressClass {
  for (const v4 of embedded) {
    const inner = classifyIpv4(v4);
    if (!inner.public) return { public: false, range: `${outer}:${inner.range}` };
  }
  return { public: true, range: outer };
}

function classifyIpv6(address: ipaddr.IPv6): AddressClass {
  const range = address.range();
  const p = address.parts;
  switch (range) {
    case "ipv4Mapped": // ::ffff:a.b.c.d — the socket connects to a.b.c.d itself
    case "rfc6145": // ::ffff:0:a.b.c.d — SIIT translates to a.b.c.d
      return judgedByEmbedded(range, [ipv4Of(p[6]!, p[7]!)]);
    case "rfc6052":
      // 64:ff9b::/96 always has the IPv4 in the last 32 bits (RFC 6052 §2.1); 64:ff9b:1::/48 is
      // for local use with any prefix length, so the embedded address cannot be located.
      return address.match(NAT64_WELL_KNOWN)
        ? judgedByEmbedded("rfc6052", [ipv4Of(p[6]!, p[7]!)])
        : { public: false, range: "rfc8215" };
    case "6to4": // 2002:AABB:CCDD::/48 — the 6to4 router is AA.BB.CC.DD
      return judgedByEmbedded("6to4", [ipv4Of(p[1]!, p[2]!)]);
    case "teredo": // 2001:0:SSSS:SSSS:flags:port:~CCCC:~CCCC — server S, client C (bits inverted)
      return judgedByEmbedded("teredo", [ipv4Of(p[2]!, p[3]!), ipv4Of(~p[6]! & 0xffff, ~p[7]! & 0xffff)]);
    case "unicast":
      if (address.match(IPV4_COMPATIBLE)) return { public: false, range: "ipv4Compatible" };
      if (!address.match(GLOBAL_UNICAST)) return { public: false, range: "reserved" };
      return { public: true, range };
    default:
      return { public: false, range };
  }
}

/**
 * Classifies an IP address (dotted-quad IPv4 or IPv6; `[v6]` brackets and a `%zone` are accepted).
 * Host names, shorthand IPv4 ("127.1") and garbage are `{ public: false, range: "invalid" }`.
 */
export function classifyAddress(address: string): AddressClass {
  const bare = address.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, ""); // [v6] brackets, fe80::1%eth0 zone
  switch (isIP(bare)) {
    case 4:
      return classifyIpv4(ipaddr.IPv4.parse(bare));
    case 6: {
      // WHATWG's IPv6 parser first: it reads ::a.b.c.d as the IPv4-compatible ::AABB:CCDD it is,
      // where ipaddr.js would turn it into the IPv4-mapped ::ffff:a.b.c.d.
      const canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
      return classifyIpv6(ipaddr.IPv6.parse(canonical));
    }
    default:
      return INVALID;
  }
}

/**
 * The range of a non-public `address` ("loopback", "private", "linkLocal", "6to4:private", …),
 * or null for a public one. Anything that is not an IP address is "invalid".
 */
export function blockedAddressRange(address: string): string | null {
  const verdict = classifyAddress(address);
  return verdict.public ? null : verdict.range;
}

/** True when an outbound connection (webhook, SMTP probe) may go to `address`: public unicast. */
export const isPublicAddress = (address: string): boolean => classifyAddress(address).public;
