// Entry point of the mail-world simulator: a DNS server and one SMTP server per mail host, all on
// loopback, built from a declarative WorldSpec. See types.ts for the contract.

import { buildZone, normalizeName, startDnsServer } from "./dns-server.ts";
import type { DnsServerHandle } from "./dns-server.ts";
import { createExpectation } from "./expectation.ts";
import { Greylist, SmtpHost, startSmtpHosts } from "./smtp-host.ts";
import type { DomainSpec, HostCounters, HostSpec, MailWorld, WorldSpec } from "./types.ts";

export type * from "./types.ts";
export { createExpectation } from "./expectation.ts";
export { DEFAULT_MIX, STOCK_MIX, generateMixedWorld } from "./generate.ts";
export { STOCK_REPLIES } from "./rules.ts";
export type { Behaviour, GeneratedWorld, GenerateOptions } from "./generate.ts";

export interface StartOptions {
  /** Fixed DNS port (UDP and TCP); default: a free one. */
  dnsPort?: number;
  /** Fixed SMTP port shared by every host; default: a free one. */
  smtpPort?: number;
}

/** Hosts reachable through DNS: every MX target, and hosts[0] of A-only domains. */
function routedHosts(domain: DomainSpec): HostSpec[] {
  const hosts = domain.hosts ?? [];
  switch (domain.dns ?? "mx") {
    case "mx":
      return hosts;
    case "a_only":
      return hosts.slice(0, 1);
    case "null_mx":
    case "nxdomain":
    case "no_records":
    case "servfail":
    case "timeout":
      return [];
  }
}

interface HostPlan {
  spec: HostSpec;
  domains: DomainSpec[];
}

/** Unique hosts by name (first definition wins, as several domains may share one MX host). */
function planHosts(spec: WorldSpec): Map<string, HostPlan> {
  const plans = new Map<string, HostPlan>();
  for (const domain of spec.domains) {
    for (const host of routedHosts(domain)) {
      const name = normalizeName(host.name);
      const plan = plans.get(name) ?? { spec: host, domains: [] };
      plan.domains.push(domain);
      plans.set(name, plan);
    }
  }
  return plans;
}

/** 127.0.1.1, 127.0.1.2, … 127.0.1.254, 127.0.2.1, …: never .0/.255, never 127.0.0.x. */
export function loopbackAddress(index: number): string {
  const third = 1 + Math.floor(index / 254);
  if (third > 255) throw new Error("mail-world: too many hosts for 127.0.x.y");
  return `127.0.${third.toString()}.${(1 + (index % 254)).toString()}`;
}

function allocateAddresses(plans: ReadonlyMap<string, HostPlan>): Map<string, string> {
  const addresses = new Map<string, string>();
  for (const [name, plan] of plans) {
    if (plan.spec.hasAddress !== false) addresses.set(name, loopbackAddress(addresses.size));
  }
  return addresses;
}

export async function startMailWorld(spec: WorldSpec, opts: StartOptions = {}): Promise<MailWorld> {
  const plans = planHosts(spec);
  const addresses = allocateAddresses(plans);
  const greylist = new Greylist();
  const hosts = new Map<string, SmtpHost>();
  for (const [name, address] of addresses) {
    const plan = plans.get(name);
    if (!plan) continue;
    const latencyMs = plan.spec.latencyMs ?? spec.latencyMs ?? 0;
    hosts.set(
      name,
      new SmtpHost({ name, spec: plan.spec, address, latencyMs, domains: plan.domains, greylist }),
    );
  }
  const smtpPort = await startSmtpHosts([...hosts.values()], opts.smtpPort);
  let dns: DnsServerHandle;
  try {
    const hostSpecs = new Map([...plans].map(([name, plan]) => [name, plan.spec]));
    dns = await startDnsServer(buildZone(spec, hostSpecs, addresses), { port: opts.dnsPort });
  } catch (error) {
    await Promise.all([...hosts.values()].map((h) => h.close()));
    throw error;
  }
  return makeWorld(spec, dns, smtpPort, hosts);
}

function makeWorld(
  spec: WorldSpec,
  dns: DnsServerHandle,
  smtpPort: number,
  hosts: ReadonlyMap<string, SmtpHost>,
): MailWorld {
  const host = (hostName: string): SmtpHost => {
    const found = hosts.get(normalizeName(hostName));
    if (!found) throw new Error(`mail-world: no host "${hostName}" with an address in this world`);
    return found;
  };
  let closing: Promise<void> | undefined;
  return {
    dns: { host: dns.host, port: dns.port },
    smtpPort,
    addressOf: (hostName) => host(hostName).address,
    counters: (hostName): HostCounters => host(hostName).counters(),
    allCounters: () => new Map([...hosts].map(([name, h]) => [name, h.counters()])),
    resetCounters: () => {
      for (const h of hosts.values()) h.resetCounters();
    },
    dnsQueries: (type) => dns.queries(type),
    resetDnsQueries: () => dns.resetQueries(),
    expectation: createExpectation(spec),
    close: () =>
      (closing ??= Promise.all([dns.close(), ...[...hosts.values()].map((h) => h.close())]).then(
        () => undefined,
      )),
  };
}
