// The provider pace kept in the database (politeness/provider-pace.ts, docs/pacing.md), step by
// step on a manual clock: the first volume refusal starts probing, refused probes move later by
// 15 %, the first answered probe sets the window, reservations fit a sliding window of 90 % of what
// the provider accepted, a refusal under the pace cuts it, a quiet pace is forgotten, and two
// processes (two pace objects on one database) see one pace.
import assert from "node:assert/strict";
import { after, before, beforeEach, test } from "node:test";
import type { Database } from "../../../src/db/client.ts";
import { createPgProviderPace } from "../../../src/politeness/provider-pace.ts";
import { ManualClock } from "../../../src/lib/clock.ts";
import type { PaceAnswer, PaceGrant, PaceUsage, ProviderPace } from "../../../src/verify/index.ts";
import { openTestDatabase } from "../../support/test-db.ts";

const QUIET_MS = 3_600_000;
const P = "google";
const E = "";

let db: Database;
let clock: ManualClock;
let pace: ProviderPace;

before(async () => {
  db = await openTestDatabase();
});

after(async () => {
  await db?.close();
});

beforeEach(async () => {
  await db.query("delete from provider_pace_spends");
  await db.query("delete from provider_paces");
  clock = new ManualClock("2026-11-29T10:00:00Z");
  pace = createPgProviderPace({ db, clock, quietMs: QUIET_MS, whenNoRoom: "defer" });
});

const at = (ms: number): Date => new Date(Date.parse("2026-11-29T10:00:00Z") + ms);

function usage(u: Partial<PaceUsage> & { startedAt: Date }): PaceUsage {
  return { provider: P, egress: E, asked: 0, accepted: 0, throttled: false, grant: null, ...u };
}

const grantOf = (a: PaceAnswer): PaceGrant => {
  assert.equal(a.kind, "granted", JSON.stringify(a));
  return a.grant;
};
const roomAtOf = (a: PaceAnswer): number => {
  assert.equal(a.kind, "no_room", JSON.stringify(a));
  return a.roomAt.getTime() - at(0).getTime();
};

/** A burst of 100 accepted RCPTs in the first second, refused at 1 s. */
async function trip(): Promise<void> {
  await pace.report(usage({ startedAt: at(0), asked: 60, accepted: 60 }));
  clock.set(at(1_000));
  const roomAt = await pace.report(usage({ startedAt: at(500), asked: 41, accepted: 40, throttled: true }));
  assert.equal(roomAt!.getTime(), at(2_000).getTime(), "first probe at S + 2 × the burst");
}

test("an unpaced provider is asked freely and costs no reservation", async () => {
  assert.equal(await pace.isPaced(P, E), false);
  assert.deepEqual(await pace.reserve(P, E, 50), { kind: "free" });
  assert.equal(await pace.report(usage({ startedAt: at(0), asked: 50, accepted: 50 })), null);
  const { rows } = await db.query("select 1 from provider_paces");
  assert.equal(rows.length, 0);
});

test("probing: nothing before the probe, one RCPT at it, 15 % later after a refused probe, then the window", async () => {
  await trip();
  assert.equal(await pace.isPaced(P, E), true);
  clock.set(at(1_500));
  assert.equal(roomAtOf(await pace.reserve(P, E, 30)), 2_000);

  clock.set(at(2_000));
  const probe = grantOf(await pace.reserve(P, E, 30));
  assert.deepEqual(probe, { granted: 1, probe: true, spend: null });
  // One probe at a time.
  assert.equal(roomAtOf(await pace.reserve(P, E, 30)), 2_300);
  const next = await pace.report(usage({ startedAt: at(2_000), asked: 1, throttled: true, grant: probe }));
  assert.equal(next!.getTime(), at(2_300).getTime());

  clock.set(at(2_300));
  const second = grantOf(await pace.reserve(P, E, 30));
  clock.set(at(2_350));
  const paced = await pace.report(usage({ startedAt: at(2_300), asked: 1, accepted: 1, grant: second }));
  // Window 2.3 s from the burst's start; the burst (100) counts as spent at the refusal (1 s).
  assert.equal(paced!.getTime(), at(3_300).getTime());
  assert.equal(roomAtOf(await pace.reserve(P, E, 30)), 3_300);

  clock.set(at(3_301));
  // 90 % of the 100 the provider accepted, per 2.3 s.
  assert.equal(grantOf(await pace.reserve(P, E, 60)).granted, 60);
  assert.equal(grantOf(await pace.reserve(P, E, 60)).granted, 30);
  assert.equal(roomAtOf(await pace.reserve(P, E, 10)), 3_301 + 2_300);
});

test("a session that asked fewer RCPTs than reserved gives the rest back", async () => {
  await trip();
  clock.set(at(2_000));
  const probe = grantOf(await pace.reserve(P, E, 5));
  await pace.report(usage({ startedAt: at(2_000), asked: 1, accepted: 1, grant: probe }));
  clock.set(at(2_000 + 1_000 + 1));
  const big = grantOf(await pace.reserve(P, E, 90));
  assert.equal(big.granted, 90);
  await pace.report(usage({ startedAt: clock.now(), asked: 20, accepted: 20, grant: big }));
  assert.equal(grantOf(await pace.reserve(P, E, 90)).granted, 70);
});

test("refused under a learnt pace: its budget is cut to 75 % and the window counts as full", async () => {
  await trip();
  clock.set(at(2_000));
  const probe = grantOf(await pace.reserve(P, E, 5));
  await pace.report(usage({ startedAt: at(2_000), asked: 1, accepted: 1, grant: probe }));
  clock.set(at(4_000));
  const g = grantOf(await pace.reserve(P, E, 40));
  clock.set(at(4_100));
  const roomAt = await pace.report(
    usage({ startedAt: at(4_000), asked: 10, accepted: 9, throttled: true, grant: g }),
  );
  assert.equal(roomAt!.getTime(), at(4_100 + 2_000).getTime());
  clock.set(at(6_101));
  // max_rcpts 100 → 75, budget 67.
  assert.equal(grantOf(await pace.reserve(P, E, 100)).granted, 67);
});

test("a pace not refused for the quiet period is forgotten", async () => {
  await trip();
  clock.set(at(1_000 + QUIET_MS));
  assert.deepEqual(await pace.reserve(P, E, 10), { kind: "free" });
  const { rows } = await db.query("select 1 from provider_paces");
  assert.equal(rows.length, 0);
});

test("another process sees the pace within its view's second, and shares its window", async () => {
  await trip();
  const other = createPgProviderPace({ db, clock, quietMs: QUIET_MS, whenNoRoom: "answer" });
  assert.equal(await other.isPaced(P, E), true);
  assert.equal(await other.isPaced(P, "198.51.100.7"), false, "another identity is not paced");
  clock.set(at(1_200));
  assert.equal(roomAtOf(await other.reserve(P, E, 1)), 2_000);
});
