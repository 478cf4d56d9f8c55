// Egress variants: SOCKS5 proxying, and servers that demand STARTTLS before MAIL FROM.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { SMTPServer } from "smtp-server";
import type { DnsPort } from "../../../src/verify/ports.ts";
import { createEngine } from "../../../src/verify/engine.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { engineFor, expected, facts } from "./helpers.ts";
import { startSocks5Server, type Socks5Server } from "./socks5-server.ts";

let world: MailWorld;
let proxy: Socks5Server;

before(async () => {
  world = await startMailWorld({
    domains: [
      { name: "proxied.test", hosts: [{ name: "mx.proxied.test" }], mailboxes: ["bob"] },
      {
        name: "refusing.test",
        hosts: [{ name: "mx.refusing.test", refuseConnections: true }],
        mailboxes: ["bob"],
      },
    ],
  });
  proxy = await startSocks5Server({ user: "probe", password: "s3cr:t" });
});
after(async () => {
  await proxy.close();
  await world.close();
});

void test("SOCKS5 proxy with user/password: the session goes through it", async () => {
  const engine = engineFor(world, {
    smtpProxy: `socks5://probe:${encodeURIComponent("s3cr:t")}@127.0.0.1:${proxy.port.toString()}`,
  });
  const [bob, ghost] = await engine.verifyGroup("proxied.test", ["bob@proxied.test", "ghost@proxied.test"]);
  await engine.close();
  assert.deepEqual(
    facts(bob!),
    expected({ status: "valid", hostName: "mx.proxied.test", serverType: "postfix" }),
  );
  assert.deepEqual(
    facts(ghost!),
    expected({ status: "invalid", hostName: "mx.proxied.test", serverType: "postfix" }),
  );
  assert.deepEqual(proxy.requests, [`${world.addressOf("mx.proxied.test")}:${world.smtpPort.toString()}`]);
});

void test("the destination refusing behind the proxy is the host's failure, not the proxy's", async () => {
  const engine = engineFor(world, {
    smtpProxy: `socks5://probe:${encodeURIComponent("s3cr:t")}@127.0.0.1:${proxy.port.toString()}`,
  });
  const r = await engine.verifyOne("bob@refusing.test");
  await engine.close();
  assert.equal(r.unknownReason, "connection_failed");
  // The proxy itself answered its health question: the result stands, no dependency failure.
  assert.equal(r.dependencyFailure ?? null, null);
  assert.deepEqual(r.checks.smtp, { status: "error", reason: "connection_failed" });
});

void test("a proxy that rejects our credentials → unknown proxy_error, our dependency unavailable", async () => {
  const engine = engineFor(world, { smtpProxy: `socks5://probe:wrong@127.0.0.1:${proxy.port.toString()}` });
  const r = await engine.verifyOne("bob@proxied.test");
  await engine.close();
  assert.equal(r.dependencyFailure?.dependency, "smtp_proxy");
  assert.equal(r.dependencyFailure?.kind, "unavailable");
  assert.deepEqual(r.checks.smtp, { status: "error", reason: "proxy_unavailable" });
  assert.deepEqual(
    facts(r),
    expected({
      status: "unknown",
      unknownReason: "proxy_error",
      hostName: "mx.proxied.test",
      serverType: "unknown",
    }),
  );
});

void test("an unreachable proxy → unknown proxy_error", async () => {
  const dead = net.createServer();
  await new Promise<void>((resolve) => dead.listen(0, "127.0.0.1", resolve));
  const port = (dead.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => dead.close(() => resolve()));
  const engine = engineFor(world, { smtpProxy: `socks5://127.0.0.1:${port.toString()}` });
  const r = await engine.verifyOne("bob@proxied.test");
  await engine.close();
  assert.equal(r.status, "unknown");
  assert.equal(r.unknownReason, "proxy_error");
  assert.equal(r.dependencyFailure?.kind, "unavailable");
});

/** A loopback listener that does `onSocket` to every connection; closed with the returned function. */
async function listener(
  onSocket: (socket: net.Socket) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

void test("a proxy that closes every connection at once is throttling us → rate_limit", async () => {
  const closing = await listener((socket) => socket.end());
  const engine = engineFor(world, { smtpProxy: `socks5://127.0.0.1:${closing.port.toString()}` });
  const r = await engine.verifyOne("bob@proxied.test");
  await engine.close();
  await closing.close();
  assert.equal(r.status, "unknown");
  assert.equal(r.dependencyFailure?.dependency, "smtp_proxy");
  assert.equal(r.dependencyFailure?.kind, "rate_limit");
});

void test("a proxy that accepts and never answers → timeout", async () => {
  const silent = await listener(() => undefined);
  const engine = engineFor(world, {
    smtpProxy: `socks5://127.0.0.1:${silent.port.toString()}`,
    smtpConnectTimeoutMs: 300,
  });
  const r = await engine.verifyOne("bob@proxied.test");
  await engine.close();
  await silent.close();
  assert.equal(r.status, "unknown");
  assert.equal(r.dependencyFailure?.kind, "timeout");
});

void test("a server demanding STARTTLS (530 5.7.0) gets it, and the RCPTs are then answered", async () => {
  // smtp-server ships a self-signed localhost certificate; it offers STARTTLS when not hidden.
  let secureRcpts = 0;
  const server = new SMTPServer({
    logger: false,
    name: "mx.tls.test",
    disabledCommands: ["AUTH"],
    onMailFrom: (_address, session, callback) => {
      if (!session.secure) {
        const error = Object.assign(new Error("5.7.0 Must issue a STARTTLS command first"), {
          responseCode: 530,
        });
        callback(error);
        return;
      }
      callback();
    },
    onRcptTo: (address, session, callback) => {
      if (session.secure) secureRcpts++;
      if (address.address.startsWith("bob@")) callback();
      else
        callback(
          Object.assign(new Error("5.1.1 <x>: Recipient address rejected: User unknown"), {
            responseCode: 550,
          }),
        );
    },
  });
  server.on("error", () => undefined);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as net.AddressInfo).port;
  const dns: DnsPort = {
    mx: async () => ({ kind: "found", records: [{ exchange: "mx.tls.test", priority: 10 }] }),
    addresses: async () => ({ kind: "found", records: ["127.0.0.1"] }),
    reverse: async () => ({ kind: "found", records: ["mx.tls.test"] }),
  };
  const engine = createEngine(
    {
      smtpPort: port,
      smtpHeloName: "probe.mailprobe.test",
      smtpMailFrom: "bounce@mailprobe.test",
      smtpCommandTimeoutMs: 2000,
      smtpAllowPrivateHosts: true,
    },
    { dns },
  );
  try {
    const [bob, ghost] = await engine.verifyGroup("tls.test", ["bob@tls.test", "ghost@tls.test"]);
    assert.deepEqual(
      facts(bob!),
      expected({ status: "valid", hostName: "mx.tls.test", serverType: "unknown" }),
    );
    assert.deepEqual(
      facts(ghost!),
      expected({ status: "invalid", hostName: "mx.tls.test", serverType: "unknown" }),
    );
    assert.equal(secureRcpts, 4); // postmaster control + probe + 2 addresses, all over TLS
  } finally {
    await engine.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
