// Shared set-up for the engine's integration tests against the mail-world simulator.
import type { EngineOptions } from "../../../src/verify/options.ts";
import type { EnginePorts } from "../../../src/verify/engine.ts";
import { createEngine, type Engine } from "../../../src/verify/engine.ts";
import type { VerificationResult } from "../../../src/verify/types.ts";
import type { MailWorld } from "../../support/mail-world/index.ts";

/** Small timeouts: the simulator answers in microseconds unless a test asks otherwise. */
function worldOptions(world: MailWorld, overrides: Partial<EngineOptions> = {}): Partial<EngineOptions> {
  return {
    dnsServers: [`${world.dns.host}:${world.dns.port.toString()}`],
    smtpPort: world.smtpPort,
    dnsTimeoutMs: 500,
    dnsTries: 1,
    smtpConnectTimeoutMs: 1000,
    smtpGreetingTimeoutMs: 1500,
    smtpCommandTimeoutMs: 1500,
    smtpHeloName: "probe.mailprobe.test",
    smtpMailFrom: "bounce@mailprobe.test",
    // The simulator's hosts live on 127.x addresses, which the outbound guard refuses by default.
    smtpAllowPrivateHosts: true,
    ...overrides,
  };
}

export function engineFor(
  world: MailWorld,
  overrides: Partial<EngineOptions> = {},
  ports: Partial<EnginePorts> = {},
): Engine {
  return createEngine(worldOptions(world, overrides), ports);
}

/** The fields a behaviour test pins down exactly (everything but email/domain/time). */
export function facts(r: VerificationResult) {
  return {
    status: r.status,
    unknownReason: r.unknownReason,
    isCatchall: r.isCatchall,
    hasMxRecords: r.hasMxRecords,
    hasReverseDns: r.hasReverseDns,
    isRoleBased: r.isRoleBased,
    isDisposable: r.isDisposable,
    hostName: r.hostName,
    serverType: r.serverType,
    needsPhysicalVerify: r.needsPhysicalVerify,
  };
}

type Facts = ReturnType<typeof facts>;

/** Expected facts with the common "nothing special" defaults. */
export function expected(partial: Partial<Facts> & Pick<Facts, "status">): Facts {
  return {
    unknownReason: null,
    isCatchall: false,
    hasMxRecords: true,
    hasReverseDns: true,
    isRoleBased: false,
    isDisposable: false,
    hostName: "",
    serverType: "unknown",
    needsPhysicalVerify: false,
    ...partial,
  };
}
