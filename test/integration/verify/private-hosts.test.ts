// The outbound guard on mail hosts (DESIGN.md §5 "Outbound guard"): the simulator's hosts live on
// 127.x addresses, exactly what a user could point an MX at to make us probe an internal network.
// By default they are refused without a connection; SMTP_ALLOW_PRIVATE_HOSTS=true (the engine
// option smtpAllowPrivateHosts) lets test worlds and labs through.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, beforeEach, test } from "node:test";
import { engineOptionsFrom, guardPorts } from "../../../src/app/engine-options.ts";
import { loadConfig } from "../../../src/config/index.ts";
import { createEngine } from "../../../src/verify/engine.ts";
import { classifyAddress } from "../../../src/net/address-policy.ts";
import { worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { engineFor, expected, facts } from "./helpers.ts";
import { startSocks5Server, type Socks5Server } from "./socks5-server.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const MX = "mx1.known.test";

let world: MailWorld;
let proxy: Socks5Server;

before(async () => {
  world = await startMailWorld({
    domains: [{ name: "known.test", hosts: [{ name: MX }], mailboxes: ["bob"] }],
  });
  proxy = await startSocks5Server();
});
beforeEach(() => world.resetCounters());
after(async () => {
  await proxy.close();
  await world.close();
});

const refused = (r: Awaited<ReturnType<ReturnType<typeof engineFor>["verifyOne"]>>) => {
  assert.deepEqual(
    facts(r),
    expected({ status: "unknown", unknownReason: "private_host_refused", hasReverseDns: false }),
  );
};

void test("default policy: an MX on 127.x is unknown/private_host_refused, and never connected to", async () => {
  const engine = engineFor(world, { smtpAllowPrivateHosts: false }, { addressPolicy: classifyAddress });
  const r = await engine.verifyOne("bob@known.test");
  await engine.close();
  refused(r);
  assert.equal(
    r.evidence,
    `policy: mail host address not public, not probed: ${MX} [${world.addressOf(MX)}] loopback`,
  );
  assert.equal(world.counters(MX).connections, 0);
});

void test("no policy plugged in: the engine fails closed", async () => {
  const engine = engineFor(world, { smtpAllowPrivateHosts: false });
  const r = await engine.verifyOne("bob@known.test");
  await engine.close();
  refused(r);
  assert.match(r.evidence, /\] unclassified$/);
  assert.equal(world.counters(MX).connections, 0);
});

void test("opted in (smtpAllowPrivateHosts): the same MX is probed → valid", async () => {
  const engine = engineFor(world, { smtpAllowPrivateHosts: true }, { addressPolicy: classifyAddress });
  const r = await engine.verifyOne("bob@known.test");
  await engine.close();
  assert.deepEqual(facts(r), expected({ status: "valid", hostName: MX, serverType: "postfix" }));
  assert.ok(world.counters(MX).connections >= 1);
});

void test("SOCKS5 egress: the proxy is never asked to reach a refused address", async () => {
  const engine = engineFor(
    world,
    { smtpAllowPrivateHosts: false, smtpProxy: `socks5://127.0.0.1:${proxy.port.toString()}` },
    { addressPolicy: classifyAddress },
  );
  const r = await engine.verifyOne("bob@known.test");
  await engine.close();
  refused(r);
  assert.deepEqual(proxy.requests, []);
});

void test("the app's wiring: SMTP_ALLOW_PRIVATE_HOSTS decides, the guard is the webhooks' one", async () => {
  for (const [flag, status] of [
    ["false", "unknown"],
    ["true", "valid"],
  ] as const) {
    const config = loadConfig(worldEnv(world, { SMTP_ALLOW_PRIVATE_HOSTS: flag }));
    const engine = createEngine(engineOptionsFrom(config.verify), guardPorts);
    const r = await engine.verifyOne("bob@known.test");
    await engine.close();
    assert.equal(r.status, status, `SMTP_ALLOW_PRIVATE_HOSTS=${flag}: ${r.evidence}`);
  }
  // Unset means refused.
  const { SMTP_ALLOW_PRIVATE_HOSTS: _allow, ...unset } = worldEnv(world);
  assert.equal(loadConfig(unset).verify.smtpAllowPrivateHosts, false);
});

void test("`mailprobe verify` refuses the private MX unless SMTP_ALLOW_PRIVATE_HOSTS=true", async () => {
  const run = (extra: Record<string, string>) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const { SMTP_ALLOW_PRIVATE_HOSTS: _allow, ...base } = worldEnv(world);
      const child = spawn(process.execPath, ["bin/mailprobe.js", "verify", "--json", "bob@known.test"], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "warn", ...base, ...extra },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
      child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
      child.once("exit", (code) => resolve({ code, stdout, stderr }));
    });
  const denied = await run({});
  assert.equal(denied.code, 0, denied.stderr);
  const d = JSON.parse(denied.stdout.trim()) as { status: string; unknown_reason: string | null };
  assert.deepEqual([d.status, d.unknown_reason], ["unknown", "private_host_refused"]);
  assert.equal(world.counters(MX).connections, 0);

  const allowed = await run({ SMTP_ALLOW_PRIVATE_HOSTS: "true" });
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.equal((JSON.parse(allowed.stdout.trim()) as { status: string }).status, "valid");
});
