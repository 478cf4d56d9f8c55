// Accuracy against ground truth: a generated world of 60 domains with the simulator's default
// mix of behaviours, every address verified through verifyGroup (one call per domain).
import assert from "node:assert/strict";
import { test } from "node:test";
import { generateMixedWorld, startMailWorld } from "../../support/mail-world/index.ts";
import { engineFor } from "./helpers.ts";

void test("≥ 99 % exact status agreement on a mixed world, and no real mailbox called invalid", async (t) => {
  const { spec, addresses } = generateMixedWorld({ seed: 42, domains: 60, addressesPerDomain: [7, 11] });
  assert.ok(addresses.length >= 500, `only ${addresses.length.toString()} addresses`);
  const world = await startMailWorld(spec);
  const engine = engineFor(world);
  t.after(async () => {
    await engine.close();
    await world.close();
  });

  const byDomain = new Map<string, string[]>();
  for (const a of addresses) {
    const domain = a.slice(a.lastIndexOf("@") + 1);
    byDomain.set(domain, [...(byDomain.get(domain) ?? []), a]);
  }
  // A few groups at a time, as the batch workers would run them.
  const groups = [...byDomain];
  const results = new Map<string, { status: string; unknownReason: string | null }>();
  const worker = async (): Promise<void> => {
    for (let next = groups.shift(); next !== undefined; next = groups.shift()) {
      const [domain, list] = next;
      const answers = await engine.verifyGroup(domain, list);
      list.forEach((a, i) => results.set(a, answers[i]!));
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));

  let agree = 0;
  let reasonAgree = 0;
  const wrong: string[] = [];
  const realCalledInvalid: string[] = [];
  for (const a of addresses) {
    const want = world.expectation(a);
    const got = results.get(a)!;
    if (got.status === want.status) agree++;
    else
      wrong.push(
        `${a}: want ${want.status}/${String(want.unknownReason)} got ${got.status}/${String(got.unknownReason)}`,
      );
    if (got.status === want.status && got.unknownReason === want.unknownReason) reasonAgree++;
    if ((want.status === "valid" || want.status === "catchall") && got.status === "invalid")
      realCalledInvalid.push(a);
  }
  const pct = (n: number): string => ((100 * n) / addresses.length).toFixed(2);
  console.log(
    `accuracy: ${agree.toString()}/${addresses.length.toString()} status agreement (${pct(agree)} %), ` +
      `${reasonAgree.toString()} with the same unknown_reason (${pct(reasonAgree)} %), ` +
      `${realCalledInvalid.length.toString()} real mailboxes called invalid`,
  );
  for (const w of wrong.slice(0, 20)) console.log(`  disagreement: ${w}`);
  assert.deepEqual(realCalledInvalid, []);
  assert.ok(agree / addresses.length >= 0.99, `${pct(agree)} %`);
});
