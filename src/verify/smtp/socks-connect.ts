// SOCKS5 egress (`smtpProxy: socks5://[user:pass@]host:port`): deployments whose own IP can't
// speak on port 25 send probes through a proxy with a clean, PTR-equipped address.
import type net from "node:net";
import { SocksClient } from "socks";
import { AbortedError } from "../abort.ts";
import { ConnectError, type ConnectPort, type ConnectFailureKind } from "./connect.ts";

export interface SocksProxyConfig {
  host: string;
  port: number;
  userId?: string;
  password?: string;
}

/** Parses `socks5://[user:pass@]host:port` (port defaults to 1080); throws on anything else. */
export function parseSocksUrl(url: string): SocksProxyConfig {
  const parsed = new URL(url);
  if (parsed.protocol !== "socks5:" && parsed.protocol !== "socks5h:") {
    throw new Error(`smtpProxy must be a socks5:// URL, got ${parsed.protocol}`);
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (host === "") throw new Error("smtpProxy has no host");
  const config: SocksProxyConfig = { host, port: parsed.port === "" ? 1080 : Number(parsed.port) };
  if (parsed.username !== "") {
    config.userId = decodeURIComponent(parsed.username);
    config.password = decodeURIComponent(parsed.password);
  }
  return config;
}

// The proxy's reply codes (RFC 1928 §6) that describe the destination rather than the proxy.
// The socks package reports them as "Socks5 proxy rejected connection - <Name>".
function socksFailureKind(message: string): ConnectFailureKind {
  if (/rejected connection - ConnectionRefused/.test(message)) return "refused";
  if (/rejected connection - (?:HostUnreachable|NetworkUnreachable)/.test(message)) return "unreachable";
  if (/rejected connection - TTLExpired/.test(message)) return "timeout";
  return "proxy";
}

/** A ConnectPort that tunnels every connection through a SOCKS5 proxy. */
export function createSocksConnect(proxyUrl: string, timeoutMs: number): ConnectPort {
  const proxy = parseSocksUrl(proxyUrl);
  return {
    connect(host, port, signal): Promise<net.Socket> {
      if (signal.aborted) return Promise.reject(new AbortedError());
      return new Promise<net.Socket>((resolve, reject) => {
        let settled = false;
        const onAbort = (): void => {
          if (settled) return;
          settled = true;
          reject(new AbortedError());
        };
        signal.addEventListener("abort", onAbort, { once: true });
        SocksClient.createConnection({
          proxy: {
            host: proxy.host,
            port: proxy.port,
            type: 5,
            userId: proxy.userId,
            password: proxy.password,
          },
          command: "connect",
          destination: { host, port },
          timeout: timeoutMs,
          set_tcp_nodelay: true,
        }).then(
          ({ socket }) => {
            signal.removeEventListener("abort", onAbort);
            // Aborted while the proxy was still connecting: nobody wants this socket any more.
            if (settled) socket.destroy();
            else {
              settled = true;
              resolve(socket);
            }
          },
          (error: unknown) => {
            signal.removeEventListener("abort", onAbort);
            if (settled) return;
            settled = true;
            const message = error instanceof Error ? error.message : String(error);
            reject(new ConnectError(socksFailureKind(message), `SOCKS5: ${message}`));
          },
        );
      });
    },
  };
}
