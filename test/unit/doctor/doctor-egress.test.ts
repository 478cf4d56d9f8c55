// `mailprobe doctor` with SMTP_EGRESS: port 25 and FCrDNS are checked through every identity.
// Loopback source addresses 127.0.0.2 and 127.0.0.3 stand for two egress IPs.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { runDoctor, type DoctorDnsPort } from "../../../src/doctor/doctor.ts";
import { createDirectConnect, directConnect } from "../../../src/verify/smtp/connect.ts";
import { closeScriptedSmtp, doctorOptions, found, NX, scriptedSmtp } from "./fixture.ts";

after(closeScriptedSmtp);

/** The server names the client address it sees in its EHLO reply, as Postfix does. */
const echoingServer = () => scriptedSmtp({ ehlo: (client) => `250 mx.example.net Hello [${client}]` });

const dns: DoctorDnsPort = {
  mx: async (d) => (d === "example.com" ? found([{ exchange: "mx.example.com", priority: 10 }]) : NX),
  addresses: async (h) =>
    h === "mx.example.com" ? found(["127.0.0.1"]) : h === "mail.example.com" ? found(["127.0.0.2"]) : NX,
  addresses6: async () => NX,
  // 127.0.0.2 has the HELO name as its forward-confirmed PTR; 127.0.0.3 has no PTR.
  reverse: async (ip) => (ip === "127.0.0.2" ? found(["mail.example.com"]) : NX),
};

test("each identity gets its own port-25 and FCrDNS verdict", async () => {
  const port = await echoingServer();
  const report = await runDoctor(doctorOptions(port), {
    dns,
    connect: directConnect,
    egress: ["127.0.0.2", "127.0.0.3"].map((ip) => ({
      name: ip,
      connect: createDirectConnect(ip),
      viaProxy: false,
    })),
  });
  const per = (id: string, egress: string) => report.checks.find((c) => c.id === id && c.egress === egress);
  assert.equal(per("smtp", "127.0.0.2")?.status, "ok");
  assert.equal(per("smtp", "127.0.0.3")?.status, "ok");
  assert.equal(per("fcrdns", "127.0.0.2")?.status, "ok");
  assert.equal(per("fcrdns", "127.0.0.3")?.status, "fail");
  assert.match(per("fcrdns", "127.0.0.3")!.message, /^egress 127\.0\.0\.3: 127\.0\.0\.3 has no PTR record/);
  assert.deepEqual(report.identities, [
    { name: "127.0.0.2", egress: { ip: "127.0.0.2", source: "reported_by_mx" } },
    { name: "127.0.0.3", egress: { ip: "127.0.0.3", source: "reported_by_mx" } },
  ]);
  assert.equal(report.ok, false, "one identity without PTR fails the run");
});

test("a source address this machine does not have: that identity's port-25 check fails", async () => {
  const port = await echoingServer();
  const report = await runDoctor(doctorOptions(port, { dnsServers: [], mxTarget: "127.0.0.1" }), {
    dns,
    connect: directConnect,
    // TEST-NET-3: no interface of a test machine carries it, so bind() fails (EADDRNOTAVAIL).
    egress: [{ name: "203.0.113.77", connect: createDirectConnect("203.0.113.77"), viaProxy: false }],
  });
  const smtp = report.checks.find((c) => c.id === "smtp");
  assert.equal(smtp?.egress, "203.0.113.77");
  assert.equal(smtp?.status, "fail");
});
