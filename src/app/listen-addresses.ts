import { networkInterfaces, type NetworkInterfaceInfo } from "node:os";

/** What `server.address()` says of a TCP listener. */
export interface BoundAddress {
  address: string;
  port: number;
}

type Interfaces = Readonly<Record<string, readonly NetworkInterfaceInfo[] | undefined>>;

const urlOf = (address: string, port: number): string =>
  `http://${address.includes(":") ? `[${address}]` : address}:${port}`;

/**
 * Every URL a listener answers on, loopback first. A wildcard bind (HOST=0.0.0.0, the default, or
 * ::) answers on every interface, and printing only 127.0.0.1 (Fastify's own choice) hid that the
 * service was reachable from the network. `::` is dual-stack on Linux, so it lists IPv4 too.
 * Link-local IPv6 addresses are left out: a URL needs their zone id and nobody types them.
 */
export function listenUrls(bound: BoundAddress, interfaces: Interfaces = networkInterfaces()): string[] {
  const { address, port } = bound;
  const anyV4 = address === "0.0.0.0";
  const anyV6 = address === "::";
  if (!anyV4 && !anyV6) return [urlOf(address, port)];
  const all = Object.values(interfaces).flatMap((list) => list ?? []);
  const usable = all.filter(
    (i) => i.family === "IPv4" || (anyV6 && i.family === "IPv6" && !/^fe[89ab]/i.test(i.address)),
  );
  // Stable: internal (loopback) first, then IPv4 before IPv6, each in the order the OS gave.
  const rank = (i: NetworkInterfaceInfo): number => (i.internal ? 0 : 2) + (i.family === "IPv4" ? 0 : 1);
  const urls = usable.sort((a, b) => rank(a) - rank(b)).map((i) => urlOf(i.address, port));
  return urls.length > 0 ? [...new Set(urls)] : [urlOf(address, port)];
}
