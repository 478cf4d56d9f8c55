import { BlockList, isIP } from "node:net";

// Where a webhook may connect. Node's own `net.BlockList` does the CIDR matching: it is the same
// code the runtime uses for socket filtering, and it checks an IPv4-mapped IPv6 address
// (::ffff:127.0.0.1, ::ffff:7f00:1) against the IPv4 rules, which a hand-written prefix compare
// on strings would miss. One list per label keeps the refusal reason explainable in logs.

interface Range {
  label: string;
  network: string;
  prefix: number;
}

const V4: readonly Range[] = [
  { label: "unspecified", network: "0.0.0.0", prefix: 8 }, // "this network"; 0.0.0.0 reaches localhost on Linux
  { label: "private", network: "10.0.0.0", prefix: 8 },
  { label: "cgnat", network: "100.64.0.0", prefix: 10 }, // RFC 6598 shared address space
  { label: "loopback", network: "127.0.0.0", prefix: 8 },
  { label: "link-local", network: "169.254.0.0", prefix: 16 }, // incl. 169.254.169.254 cloud metadata
  { label: "private", network: "172.16.0.0", prefix: 12 },
  { label: "private", network: "192.168.0.0", prefix: 16 },
  { label: "multicast", network: "224.0.0.0", prefix: 4 },
  { label: "reserved", network: "240.0.0.0", prefix: 4 }, // incl. 255.255.255.255 broadcast
];

const V6: readonly Range[] = [
  { label: "unspecified", network: "::", prefix: 128 },
  { label: "loopback", network: "::1", prefix: 128 },
  // Deprecated IPv4-compatible form (::a.b.c.d); nothing public lives there.
  { label: "ipv4-compatible", network: "::", prefix: 96 },
  { label: "unique-local", network: "fc00::", prefix: 7 }, // incl. fd00:ec2::254 (AWS metadata over IPv6)
  { label: "link-local", network: "fe80::", prefix: 10 },
  { label: "multicast", network: "ff00::", prefix: 8 },
];

const LISTS: ReadonlyArray<{ label: string; list: BlockList }> = [
  ...V4.map((r) => ({ r, type: "ipv4" as const })),
  ...V6.map((r) => ({ r, type: "ipv6" as const })),
].map(({ r, type }) => {
  const list = new BlockList();
  list.addSubnet(r.network, r.prefix, type);
  return { label: r.label, list };
});

// RFC 6052 NAT64 well-known prefix: 64:ff9b::a.b.c.d reaches the embedded IPv4 address through
// the network's NAT64 gateway, so the embedded address is what must be public.
const NAT64 = new BlockList();
NAT64.addSubnet("64:ff9b::", 96, "ipv6");

function embeddedIpv4(v6: string): string {
  // The URL parser prints the canonical compressed form, whose last two groups are the low 32 bits.
  const groups = new URL(`http://[${v6}]/`).hostname.slice(1, -1).split(":");
  const hi = parseInt(groups.at(-2) || "0", 16);
  const lo = parseInt(groups.at(-1) || "0", 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
}

/**
 * The label of the non-public range `address` falls in ("loopback", "private", "link-local", …),
 * or null for a public address. Anything that is not an IP address counts as "invalid".
 */
export function blockedAddressRange(address: string): string | null {
  const bare = address.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, ""); // [v6] brackets, fe80::1%eth0 zone
  const family = isIP(bare);
  if (family === 0) return "invalid";
  const type = family === 4 ? "ipv4" : "ipv6";
  if (type === "ipv6" && NAT64.check(bare, "ipv6")) {
    const inner = blockedAddressRange(embeddedIpv4(bare));
    return inner === null ? null : `nat64-${inner}`;
  }
  for (const { label, list } of LISTS) if (list.check(bare, type)) return label;
  return null;
}

/** True when a webhook may connect to `address`: a public unicast IP. */
export const isPublicAddress = (address: string): boolean => blockedAddressRange(address) === null;
