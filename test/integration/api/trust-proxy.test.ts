// TRUST_PROXY names the proxies whose X-Forwarded-For is believed. nginx's
// documented `proxy_add_x_forwarded_for` appends the address it saw to whatever the client sent,
// so the client's address is the rightmost entry our proxy did not add: a client that writes the
// operator's address into the header locks out nobody but itself, and rotating that header does
// not dodge the failed-login limit. `TRUST_PROXY=true` (believe every hop) is refused at start.
// inject() connects from 127.0.0.1, the proxy here (TRUST_PROXY=loopback).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { loadConfig } from "../../../src/config/index.ts";
import { OPERATOR_MAX_FAILURES } from "../../../src/http/routes/operator.ts";
import { createTestContext, type TestContext } from "../../support/test-app.ts";

const TOKEN = "operator-token-0123456789abcdef";
const OPERATOR_IP = "192.0.2.10";
const ATTACKER_IP = "198.51.100.66";

let ctx: TestContext;

before(async () => {
  ctx = await createTestContext({ env: { ADMIN_TOKEN: TOKEN, TRUST_PROXY: "loopback" } });
});

after(async () => {
  await ctx?.close();
});

/** A request through the proxy from `client`, whose own X-Forwarded-For (if any) the proxy extends. */
const viaProxy = (client: string, forged: string | null, token: string) =>
  ctx.app.inject({
    method: "GET",
    url: "/api/v1/operator/users",
    headers: {
      authorization: `Bearer ${token}`,
      "x-forwarded-for": forged === null ? client : `${forged}, ${client}`,
    },
  });

test("a forged X-Forwarded-For is ignored: the attacker locks out only itself, whatever it writes", async () => {
  for (let i = 0; i < OPERATOR_MAX_FAILURES; i++) {
    // Claims the operator's address, then a new address each time.
    const forged = i === 0 ? OPERATOR_IP : `203.0.113.${(i + 1).toString()}`;
    const res = await viaProxy(ATTACKER_IP, forged, "wrong-token");
    assert.ok([401, 429].includes(res.statusCode), res.body);
  }
  const locked = await viaProxy(ATTACKER_IP, "203.0.113.200", "wrong-token");
  assert.equal(locked.statusCode, 429, "rotating the header did not dodge the limit");
  const operator = await viaProxy(OPERATOR_IP, null, TOKEN);
  assert.equal(operator.statusCode, 200, `the operator is not locked out: ${operator.body}`);
});

test("TRUST_PROXY takes proxies' addresses and ranges; true, and entries that are no address, are refused", () => {
  const load = (value: string) => loadConfig({ TRUST_PROXY: value, DATA_DIR: "/nonexistent" });
  assert.deepEqual(load("loopback").trustProxy, ["loopback"]);
  assert.deepEqual(load("10.0.0.5, 10.0.0.0/24,2001:db8::/32").trustProxy, [
    "10.0.0.5",
    "10.0.0.0/24",
    "2001:db8::/32",
  ]);
  assert.deepEqual(load("false").trustProxy, []);
  assert.throws(() => load("true"), /would believe an X-Forwarded-For any client writes/);
  assert.throws(() => load("proxy.example"), /"proxy\.example" is neither an IP address/);
  assert.throws(() => load("10.0.0.0/33"), /prefix length outside 0–32/);
  assert.throws(() => load("10.0.0.1,"), /entry 2 is empty/);
});
