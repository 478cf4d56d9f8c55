// `mailprobe doctor` as a child process against the mail-world simulator. The DNS answers come
// from a zone of this file (served by the simulator's own DNS server code): the simulator's zone
// has no PTR for our egress address (127.0.0.1) nor a MAIL FROM domain. A scripted host plays
// stock Postfix with reject_non_fqdn_helo_hostname.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import {
  reverseName,
  startDnsServer,
  type DnsServerHandle,
  type ZoneEntry,
} from "../../support/mail-world/dns-server.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const STRICT_ADDRESS = "127.0.3.1";

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  elapsedMs: number;
}

function runCli(args: string[], vars: Record<string, string>): Promise<Outcome> {
  // Only what the test sets: never the developer's DATABASE_URL or SMTP_* variables.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, ...vars };
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["bin/mailprobe.js", ...args],
      { cwd: ROOT, env, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
        resolve({ code, stdout, stderr, elapsedMs: Date.now() - started });
      },
    );
  });
}

/** Postfix with reject_non_fqdn_helo_hostname and smtpd_delay_reject=yes: EHLO passes, RCPT pays. */
async function startStrictPostfix(port: number): Promise<net.Server> {
  const server = net.createServer((socket) => {
    socket.on("error", () => undefined);
    let helo = "";
    let partial = "";
    socket.write("220 mx.strict.test ESMTP Postfix\r\n");
    socket.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString("utf8")).split("\r\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === "EHLO" || verb === "HELO") {
          helo = line.slice(5).trim();
          socket.write("250-mx.strict.test\r\n250-PIPELINING\r\n250 8BITMIME\r\n");
        } else if (verb === "MAIL") socket.write("250 2.1.0 Ok\r\n");
        else if (verb === "RCPT") {
          socket.write(
            helo.includes(".")
              ? "250 2.1.5 Ok\r\n"
              : `504 5.5.2 <${helo}>: Helo command rejected: need fully-qualified hostname\r\n`,
          );
        } else if (verb === "QUIT") socket.end("221 2.0.0 Bye\r\n");
        else socket.write("502 5.5.2 Error: command not recognized\r\n");
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, STRICT_ADDRESS, resolve);
  });
  return server;
}

let world: MailWorld;
let dns: DnsServerHandle;
let strict: net.Server;

before(async () => {
  world = await startMailWorld({
    domains: [
      { name: "acme.test", hosts: [{ name: "mx1.acme.test" }], mailboxes: ["postmaster"] },
      // The MAIL FROM domain, served by the same host.
      { name: "mailprobe.test", hosts: [{ name: "mx1.acme.test" }], mailboxes: ["postmaster", "bounce"] },
      { name: "refused.test", hosts: [{ name: "mx.refused.test", refuseConnections: true }] },
    ],
  });
  strict = await startStrictPostfix(world.smtpPort);
  const mx = (exchange: string): ZoneEntry => ({ mode: "answer", mx: [{ exchange, priority: 10 }] });
  const a = (address: string): ZoneEntry => ({ mode: "answer", a: address });
  dns = await startDnsServer(
    new Map<string, ZoneEntry>([
      ["acme.test", mx("mx1.acme.test")],
      ["mailprobe.test", mx("mx1.acme.test")],
      ["refused.test", mx("mx.refused.test")],
      ["strict.test", mx("mx.strict.test")],
      ["mx1.acme.test", a(world.addressOf("mx1.acme.test"))],
      ["mx.refused.test", a(world.addressOf("mx.refused.test"))],
      ["mx.strict.test", a(STRICT_ADDRESS)],
      // Our egress address (connections to 127.0.x.y leave from 127.0.0.1), forward-confirmed.
      [reverseName("127.0.0.1"), { mode: "answer", ptr: "probe.mailprobe.test" }],
      ["probe.mailprobe.test", a("127.0.0.1")],
    ]),
  );
});

after(async () => {
  await dns?.close();
  await new Promise<void>((resolve) => (strict ? strict.close(() => resolve()) : resolve()));
  await world?.close();
});

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    DNS_SERVERS: `${dns.host}:${dns.port}`,
    SMTP_PORT: String(world.smtpPort),
    DNS_TIMEOUT_MS: "500",
    DNS_TRIES: "1",
    SMTP_CONNECT_TIMEOUT_MS: "1000",
    SMTP_GREETING_TIMEOUT_MS: "2000",
    SMTP_COMMAND_TIMEOUT_MS: "2000",
    SMTP_HELO_NAME: "probe.mailprobe.test",
    SMTP_MAIL_FROM: "bounce@mailprobe.test",
    LOG_LEVEL: "warn",
    // The doctor must not need these: a data directory that can't exist and no database.
    DATA_DIR: "/nonexistent/mailprobe-doctor",
    ...extra,
  };
}

/** The text output's check lines, by check id: "ok", "warn" or "fail", and the rest of the line. */
function verdicts(stdout: string): Map<string, { status: string; text: string }> {
  const found = new Map<string, { status: string; text: string }>();
  for (const line of stdout.split("\n")) {
    const m = /^(ok|warn|fail)\s+(\w+)\s+(.*)$/.exec(line);
    if (m) found.set(m[2]!, { status: m[1]!, text: m[3]! });
  }
  return found;
}

const statuses = (out: Outcome): Record<string, string> =>
  Object.fromEntries([...verdicts(out.stdout)].map(([id, v]) => [id, v.status]));

describe("mailprobe doctor", () => {
  test("a good set-up: every check ok, exit 0, one line per check (probing the MAIL FROM domain's MX)", async () => {
    const out = await runCli(["doctor"], env());
    assert.equal(out.code, 0, `${out.stdout}\n${out.stderr}`);
    assert.deepEqual(statuses(out), {
      dns: "ok",
      helo_name: "ok",
      smtp: "ok",
      fcrdns: "ok",
      mail_from_domain: "ok",
    });
    const v = verdicts(out.stdout);
    assert.match(
      v.get("smtp")!.text,
      /mx1\.acme\.test \[127\.0\.1\.1\]:\d+ .*RCPT TO:<postmaster@mailprobe\.test>/,
    );
    assert.match(v.get("fcrdns")!.text, /127\.0\.0\.1 → PTR probe\.mailprobe\.test → 127\.0\.0\.1/);
    assert.match(out.stdout, /^5 ok, 0 warn, 0 fail$/m);
    assert.equal(out.stderr, "");
  });

  test("a bare HELO name: helo_name fails, and Postfix's 504 at RCPT fails the smtp check", async () => {
    const out = await runCli(["doctor", "--mx", "strict.test"], env({ SMTP_HELO_NAME: "web-1" }));
    assert.equal(out.code, 1, out.stdout);
    const v = verdicts(out.stdout);
    assert.equal(v.get("helo_name")?.status, "fail");
    assert.match(v.get("helo_name")!.text, /web-1 is not fully qualified.*Fix: set SMTP_HELO_NAME/);
    assert.equal(v.get("smtp")?.status, "fail");
    assert.match(v.get("smtp")!.text, /504 5\.5\.2 <web-1>: Helo command rejected.*Fix: set SMTP_HELO_NAME/);
    // The same server accepts a fully-qualified name.
    const fixed = await runCli(["doctor", "--mx", "strict.test"], env());
    assert.equal(verdicts(fixed.stdout).get("smtp")?.status, "ok", fixed.stdout);
  });

  test("an MX that refuses connections: smtp fails (exit 1), FCrDNS is not checked", async () => {
    const out = await runCli(["doctor", "--mx", "refused.test"], env());
    assert.equal(out.code, 1, out.stdout);
    const v = verdicts(out.stdout);
    assert.equal(v.get("smtp")?.status, "fail");
    assert.match(
      v.get("smtp")!.text,
      /mx\.refused\.test \[127\.0\.1\.\d+\]:\d+ refused the connection\. Fix: /,
    );
    assert.equal(v.get("fcrdns")?.status, "warn");
    assert.match(v.get("fcrdns")!.text, /not checked/);
  });

  test("a PTR that names another host: fcrdns warns and says which name to use", async () => {
    const out = await runCli(["doctor", "--mx", "acme.test"], env({ SMTP_HELO_NAME: "web1.mailprobe.test" }));
    const v = verdicts(out.stdout);
    assert.equal(v.get("fcrdns")?.status, "warn", out.stdout);
    assert.match(
      v.get("fcrdns")!.text,
      /PTR probe\.mailprobe\.test → 127\.0\.0\.1 is forward-confirmed, but the HELO name is web1\.mailprobe\.test.*Fix: set SMTP_HELO_NAME=probe\.mailprobe\.test/,
    );
    // Warnings alone don't fail the run.
    assert.equal(out.code, 0, out.stdout);
  });

  test("--json: one document with the verdicts, the MX and the egress IP", async () => {
    const out = await runCli(["doctor", "--mx", "acme.test", "--json"], env());
    assert.equal(out.code, 0, out.stderr);
    const lines = out.stdout.trim().split("\n");
    assert.equal(lines.length, 1);
    const doc = JSON.parse(lines[0]!);
    assert.deepEqual(Object.keys(doc).sort(), [
      "checks",
      "egress",
      "helo_name",
      "identities",
      "mail_from",
      "mx",
      "ok",
    ]);
    // Without SMTP_EGRESS there is one identity, the default, and no list.
    assert.deepEqual(doc.identities, []);
    assert.equal(doc.ok, true);
    assert.equal(doc.helo_name, "probe.mailprobe.test");
    assert.equal(doc.mail_from, "bounce@mailprobe.test");
    assert.deepEqual(doc.mx, { host: "mx1.acme.test", address: world.addressOf("mx1.acme.test") });
    assert.deepEqual(doc.egress, { ip: "127.0.0.1", source: "local_socket" });
    assert.deepEqual(
      doc.checks.map((c: { id: string }) => c.id),
      ["dns", "helo_name", "smtp", "fcrdns", "mail_from_domain"],
    );
    for (const c of doc.checks) {
      assert.deepEqual(Object.keys(c).sort(), ["fix", "id", "message", "status"]);
      assert.equal(c.status, "ok");
      assert.equal(c.fix, null);
    }
  });

  test("resolvers that don't answer: dns fails quickly and no check hangs", async () => {
    const silent = await closedUdpPort();
    const out = await runCli(["doctor", "--mx", "acme.test"], env({ DNS_SERVERS: `127.0.0.1:${silent}` }));
    assert.equal(out.code, 1, out.stdout);
    const v = verdicts(out.stdout);
    assert.equal(v.get("dns")?.status, "fail");
    assert.match(v.get("dns")!.text, /DNS_SERVERS 127\.0\.0\.1:\d+ (did not answer|failed)/);
    assert.equal(v.get("smtp")?.status, "fail");
    assert.ok(out.elapsedMs < 30_000, `took ${out.elapsedMs} ms`);
  });
});

/** A UDP port with nothing bound to it. */
async function closedUdpPort(): Promise<number> {
  const { createSocket } = await import("node:dgram");
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}
