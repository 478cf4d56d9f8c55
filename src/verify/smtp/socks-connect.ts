// SOCKS5 egress (`smtpProxy: socks5://[user:pass@]host:port`): deployments whose own IP can't
// speak on port 25 send probes through a proxy with a clean, PTR-equipped address.
import net from "node:net";
import { SocksClient } from "socks";
import { SharedProbe } from "../../lib/shared-probe.ts";
import { AbortedError } from "../abort.ts";
import type { ConnectPort, ProxyHealth } from "../ports.ts";
import { ConnectError, type ConnectFailureKind } from "./connect.ts";

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

// How long one answer to "does our proxy answer?" stands for the failures that follow it.
const PROXY_HEALTH_TTL_MS = 1_000;

/**
 * The proxy's own greeting (RFC 1928 §3) and, when it asks for them, our credentials (RFC 1929):
 * a proxy that takes both is there and would work for us. Nothing is connected through it, so
 * the answer says nothing about any mail host.
 */
function probeSocksProxy(proxy: SocksProxyConfig, timeoutMs: number): Promise<ProxyHealth> {
  const methods = proxy.userId === undefined ? [0x00] : [0x00, 0x02];
  let stage: "greeting" | "auth" = "greeting";
  return new Promise<ProxyHealth>((resolve) => {
    const socket = net.connect({ host: proxy.host, port: proxy.port });
    let settled = false;
    const settle = (health: ProxyHealth): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(health);
    };
    const timer = setTimeout(() => settle("timeout"), timeoutMs);
    timer.unref();
    let connected = false;
    socket.once("connect", () => {
      connected = true;
      socket.write(Buffer.from([0x05, methods.length, ...methods]));
    });
    socket.on("data", (data: Buffer) => {
      if (stage === "auth") {
        // RFC 1929 §2: status 0 is success; anything else means our credentials are refused.
        settle(data.length >= 2 && data[1] === 0x00 ? "answers" : "unavailable");
        return;
      }
      if (data.length < 2 || data[0] !== 0x05 || data[1] === 0xff) {
        settle("unavailable"); // no acceptable method: our credentials or its configuration
        return;
      }
      if (data[1] !== 0x02) {
        settle("answers");
        return;
      }
      stage = "auth";
      const user = Buffer.from(proxy.userId ?? "");
      const password = Buffer.from(proxy.password ?? "");
      socket.write(
        Buffer.concat([Buffer.from([0x01, user.length]), user, Buffer.from([password.length]), password]),
      );
    });
    socket.once("error", () => settle(connected ? "rate_limit" : "unavailable"));
    socket.once("close", () => settle(connected ? "rate_limit" : "unavailable"));
  });
}

/** A ConnectPort that tunnels every connection through a SOCKS5 proxy. */
export function createSocksConnect(proxyUrl: string, timeoutMs: number): ConnectPort {
  const proxy = parseSocksUrl(proxyUrl);
  const health = new SharedProbe(PROXY_HEALTH_TTL_MS, () => probeSocksProxy(proxy, timeoutMs), Date.now);
  return {
    dependencyHealth: () => health.get(),
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
