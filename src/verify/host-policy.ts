// The outbound guard applied to mail hosts (DESIGN.md §5 "Outbound guard"): a user must not be
// able to make us probe port 25 on the operator's own network by publishing an MX (or an A
// record) that points at 127.0.0.1, 10.0.0.5 or 169.254.169.254. Whether we connect directly or
// through SOCKS5, the connection goes to an IP we resolved, so the check is on those IPs, before
// any connection (and before the host gate: a refused host takes no politeness slot).
import type { AddressPolicy } from "./ports.ts";
import type { MailHost } from "./resolve-domain.ts";

export interface RefusedAddress {
  host: string;
  address: string;
  range: string;
}

export interface VettedHosts {
  /** The hosts in their order, each with only its allowed addresses; hosts left without one dropped. */
  allowed: MailHost[];
  refused: RefusedAddress[];
}

/** Splits a domain's mail hosts into what the policy allows and what it refuses. */
export function vetMailHosts(hosts: readonly MailHost[], policy: AddressPolicy): VettedHosts {
  const allowed: MailHost[] = [];
  const refused: RefusedAddress[] = [];
  for (const host of hosts) {
    const addresses: string[] = [];
    for (const address of host.addresses) {
      const verdict = policy(address);
      if (verdict.public) addresses.push(address);
      else refused.push({ host: host.name, address, range: verdict.range });
    }
    if (addresses.length > 0) allowed.push({ ...host, addresses });
  }
  return { allowed, refused };
}

/**
 * vetMailHosts one host at a time, for hosts looked up as they are needed: yields the allowed
 * ones in order and appends every refused address to `refused`.
 */
export async function* vetEach(
  hosts: AsyncIterable<MailHost>,
  policy: AddressPolicy,
  refused: RefusedAddress[],
): AsyncGenerator<MailHost> {
  for await (const host of hosts) {
    const vetted = vetMailHosts([host], policy);
    refused.push(...vetted.refused);
    yield* vetted.allowed;
  }
}

/** "policy: mail host address not public: mx.example.com [10.0.0.5] private, …" (at most three named). */
export function refusalEvidence(refused: readonly RefusedAddress[]): string {
  const named = refused.slice(0, 3).map((r) => `${r.host} [${r.address}] ${r.range}`);
  const more = refused.length > 3 ? `, and ${(refused.length - 3).toString()} more` : "";
  return `policy: mail host address not public, not probed: ${named.join(", ")}${more}`;
}
