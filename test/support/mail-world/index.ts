// Entry point of the mail-world simulator: a DNS server and one SMTP server per mail host (one per
// front end: HostSpec.frontEnd), all on loopback, built from a declarative WorldSpec. See
// types.ts for the contract.

import { buildZone, normalizeName, startDnsServer } from "./dns-server.ts";
import type { DnsServerHandle } from "./dns-server.ts";
import { createExpectation } from "./expectation.ts";
import { routedHosts } from "./rules.ts";
import { Greylist, SmtpHost, startSmtpHosts } from "./smtp-host.ts";
import { RcptThrottles } from "./throttle.ts";
import type { DomainSpec, HostCounters, HostSpec, MailWorld, WorldSpec } from "./types.ts";

export type * from "./types.ts";
export { createExpectation } from "./expectation.ts";
export { DEFAULT_MIX, NO_HOLDUPS_MIX, STOCK_MIX, generateMixedWorld, tenantFrontEnd } from "./generate.ts";
export { STOCK_REPLIES } from "./rules.ts";
export type { Behaviour, GeneratedWorld, GenerateOptions, TenantFrontEndOptions } from "./generate.ts";

export interface StartOptions {
  /** Fixed DNS port (UDP and TCP); default: a free one. */
  dnsPort?: number;
  /** Fixed SMTP port shared by every host; default: a free one. */
  smtpPort?: number;
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

/** One SMTP listener: a host name of its own, or every name of a front end. */
interface ListenerPlan {
  /** The host name, or the front end's normalized label. */
  key: string;
  /** The first member's spec: the listener behaves as it says. */
  spec: HostSpec;
  /** Host names served here (with an address). */
  names: string[];
  domains: DomainSpec[];
}

/** Groups the hosts that have an address into listeners, in host order (front ends at their first member). */
function planListeners(plans: ReadonlyMap<string, HostPlan>): Map<string, ListenerPlan> {
  const listeners = new Map<string, ListenerPlan>();
  for (const [name, plan] of plans) {
    if (plan.spec.hasAddress === false) continue;
    const label = plan.spec.frontEnd === undefined ? undefined : normalizeName(plan.spec.frontEnd);
    const key = label ?? name;
    const listener = listeners.get(key);
    if (!listener) {
      listeners.set(key, { key, spec: plan.spec, names: [name], domains: [...plan.domains] });
      continue;
    }
    // A plain host and a front end label of the same name would be two listeners on one name.
    const existingLabel = listener.spec.frontEnd === undefined ? undefined : key;
    if (existingLabel !== label) {
      throw new Error(`mail-world: front end "${key}" is also the name of a host outside it`);
    }
    listener.names.push(name);
    for (const domain of plan.domains) {
      if (!listener.domains.includes(domain)) listener.domains.push(domain);
    }
  }
  return listeners;
}

/** 127.0.1.1, 127.0.1.2, … 127.0.1.254, 127.0.2.1, …: never .0/.255, never 127.0.0.x. */
export function loopbackAddress(index: number): string {
  const third = 1 + Math.floor(index / 254);
  if (third > 255) throw new Error("mail-world: too many hosts for 127.0.x.y");
  return `127.0.${third.toString()}.${(1 + (index % 254)).toString()}`;
}

export async function startMailWorld(spec: WorldSpec, opts: StartOptions = {}): Promise<MailWorld> {
  const listeners = planListeners(planHosts(spec));
  const greylist = new Greylist();
  const throttles = declaredThrottles(spec);
  /** Listeners by key (host name or front-end label), each once. */
  const hosts = new Map<string, SmtpHost>();
  /** Every name with an address, front-end members and labels included, to its listener. */
  const byName = new Map<string, SmtpHost>();
  const addresses = new Map<string, string>();
  const ptrs = new Map<string, string>();
  for (const listener of listeners.values()) {
    const address = loopbackAddress(hosts.size);
    const latencyMs = listener.spec.latencyMs ?? spec.latencyMs ?? 0;
    const { key, domains } = listener;
    const host = new SmtpHost({
      name: key,
      spec: listener.spec,
      address,
      latencyMs,
      domains,
      greylist,
      throttles,
    });
    hosts.set(key, host);
    byName.set(key, host);
    for (const name of listener.names) {
      byName.set(name, host);
      addresses.set(name, address);
    }
    // A front end's address points back at its label, the name its banner gives.
    if (listener.spec.hasPtr !== false) ptrs.set(address, key);
  }
  const smtpPort = await startSmtpHosts([...hosts.values()], opts.smtpPort);
  let dns: DnsServerHandle;
  try {
    dns = await startDnsServer(buildZone(spec, addresses, ptrs), { port: opts.dnsPort });
  } catch (error) {
    await Promise.all([...hosts.values()].map((h) => h.close()));
    throw error;
  }
  return makeWorld(spec, dns, smtpPort, hosts, byName, throttles);
}

/** The world's quotas, once every host's HostSpec.throttle is known to name one of them. */
function declaredThrottles(spec: WorldSpec): RcptThrottles {
  const throttles = new RcptThrottles(spec.throttles);
  for (const domain of spec.domains) {
    for (const host of domain.hosts ?? []) {
      if (host.throttle !== undefined) throttles.assertDeclared(host.throttle, host.name);
    }
  }
  return throttles;
}

function makeWorld(
  spec: WorldSpec,
  dns: DnsServerHandle,
  smtpPort: number,
  hosts: ReadonlyMap<string, SmtpHost>,
  byName: ReadonlyMap<string, SmtpHost>,
  throttles: RcptThrottles,
): MailWorld {
  const host = (hostName: string): SmtpHost => {
    const found = byName.get(normalizeName(hostName));
    if (!found) throw new Error(`mail-world: no host "${hostName}" with an address in this world`);
    return found;
  };
  const byAddress = new Map([...hosts.values()].map((h) => [h.address, h]));
  let closing: Promise<void> | undefined;
  return {
    dns: { host: dns.host, port: dns.port },
    smtpPort,
    addressOf: (hostName) => host(hostName).address,
    counters: (hostName): HostCounters => host(hostName).counters(),
    countersOfAddress: (address): HostCounters => {
      const found = byAddress.get(address);
      if (!found) throw new Error(`mail-world: no host listens on ${address}`);
      return found.counters();
    },
    allCounters: () => new Map([...hosts].map(([key, h]) => [key, h.counters()])),
    resetCounters: () => {
      for (const h of hosts.values()) h.resetCounters();
      throttles.resetCounters();
    },
    throttleCounters: (name) => throttles.counters(name),
    dnsQueries: (type) => dns.queries(type),
    resetDnsQueries: () => dns.resetQueries(),
    expectation: createExpectation(spec),
    close: () =>
      (closing ??= Promise.all([dns.close(), ...[...hosts.values()].map((h) => h.close())]).then(
        () => undefined,
      )),
  };
}
