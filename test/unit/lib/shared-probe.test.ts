import assert from "node:assert/strict";
import { test } from "node:test";
import { SharedProbe } from "../../../src/lib/shared-probe.ts";

test("callers within the window share one probe, failures included; after it, or after forget(), a new one", async () => {
  let now = 1_000;
  let probes = 0;
  const probe = new SharedProbe(
    1_000,
    () => {
      probes++;
      return probes === 1 ? Promise.reject(new Error("down")) : Promise.resolve(probes);
    },
    () => now,
  );
  const first = [probe.get(), probe.get()];
  assert.equal(first[0], first[1], "the same promise");
  for (const p of first) await assert.rejects(p, /down/);
  now += 1_000;
  await assert.rejects(probe.get(), /down/, "still inside the window at exactly ttl");
  now += 1;
  assert.equal(await probe.get(), 2);
  assert.equal(await probe.get(), 2);
  probe.forget();
  assert.equal(await probe.get(), 3);
  assert.equal(probes, 3);
});
