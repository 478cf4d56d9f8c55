import { isIPv4, isIPv6 } from "node:net";
import { ConfigError } from "./env-vars.ts";

const FORMS = "IPv4, IPv4:port, IPv6, [IPv6] or [IPv6]:port";

/**
 * Why one DNS_SERVERS entry is unusable, or null. Entries go to c-ares (Resolver.setServers),
 * which takes IP addresses only: a host name threw ERR_INVALID_IP_ADDRESS at the first engine
 * start, after migrations, with a stack trace. It also takes any port without complaint and
 * misuses it: 99999 silently became 34463 (mod 65536), 65536 the default 53, and port 0 aborts
 * the whole process on a C++ assertion in cares_wrap (measured on Node 22.23).
 */
function dnsServerProblem(entry: string): string | null {
  if (entry === "") return "is empty";
  if (isIPv6(entry)) return null;
  const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(entry);
  if (bracketed) {
    if (!isIPv6(bracketed[1]!)) return "has brackets around something that is not an IPv6 address";
    return bracketed[2] === undefined ? null : portProblem(bracketed[2]);
  }
  const colon = entry.lastIndexOf(":");
  const host = colon < 0 ? entry : entry.slice(0, colon);
  if (!isIPv4(host)) {
    return host.includes(":")
      ? "is not an IP address (an IPv6 address with a port is written [IPv6]:port)"
      : "is not an IP address (resolvers are given by address: Node's resolver takes no host names)";
  }
  return colon < 0 ? null : portProblem(entry.slice(colon + 1));
}

function portProblem(port: string): string | null {
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    return `has port "${port}"; a port is an integer from 1 to 65535`;
  return null;
}

/** A comma-separated list of DNS resolvers; empty or unset = the system's. */
export function dnsServersVar(env: Record<string, string | undefined>, name: string): string[] {
  const raw = env[name]?.trim();
  if (!raw) return [];
  return raw.split(",").map((part) => {
    const entry = part.trim();
    const problem = dnsServerProblem(entry);
    if (problem) throw new ConfigError(`${name}: "${entry}" ${problem}; each entry is ${FORMS}`);
    return entry;
  });
}
