// The task page's time left with addresses waiting for a server's retry.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  addSample,
  etaWithoutRetriesMs,
  etaWithPacesMs,
  formatUntil,
  pacedLine,
  retriesLine,
  retriesSettleBy,
} from "../../../web/src/lib/eta.ts";

test("retriesSettleBy: the task's retries end, else its latest scheduled retry; none when nothing waits", () => {
  const next = "2026-11-26T10:05:00.000Z";
  const last = "2026-11-26T10:20:00.000Z";
  const end = "2026-11-26T10:25:00.000Z";
  assert.equal(
    retriesSettleBy({ pending: 0, next_attempt_at: null, last_attempt_at: null, settles_at: null }),
    null,
  );
  assert.equal(
    retriesSettleBy({ pending: 98, next_attempt_at: next, last_attempt_at: last, settles_at: end }),
    end,
  );
  // A task from before retry windows has no end: its latest retry is the best answer.
  assert.equal(
    retriesSettleBy({ pending: 98, next_attempt_at: next, last_attempt_at: last, settles_at: null }),
    last,
  );
  // An older server without the new fields.
  assert.equal(retriesSettleBy({ pending: 2, next_attempt_at: next }), next);
});

test("etaWithoutRetriesMs: the rate covers the other addresses only, so retries don't read as 'less than a minute'", () => {
  let s = addSample([], { at: 0, done: 0 });
  s = addSample(s, { at: 10_000, done: 100 });
  // 1,634 addresses, 98 waiting for retries: 1,436 left to do at 10 per second.
  assert.equal(etaWithoutRetriesMs(s, 1_634, 98), 143_600);
  // Only the retries left: nothing for the rate to estimate.
  s = addSample(s, { at: 20_000, done: 1_536 });
  assert.equal(etaWithoutRetriesMs(s, 1_634, 98), 0);
});

test("retriesLine and formatUntil: '1,536 done; 98 wait for retries, next try 09:55, settled by 10:25'", () => {
  const now = new Date(2026, 10, 26, 9, 50);
  const until = formatUntil(new Date(2026, 10, 26, 10, 25).toISOString(), now);
  assert.match(until, /^10:25/);
  assert.ok(!until.includes("2026"), until);
  assert.match(
    formatUntil(new Date(2026, 10, 27, 10, 25).toISOString(), now),
    /2026/,
    "another day has its date",
  );
  const next = formatUntil(new Date(2026, 10, 26, 9, 55).toISOString(), now);
  assert.equal(
    retriesLine(1_536, 98, until, next),
    `${(1_536).toLocaleString()} done; 98 wait for retries, next try ${next}, settled by ${until}.`,
  );
  // The next try is the window's end, or not known: said once.
  assert.equal(retriesLine(1, 1, until, until), `1 done; 1 waits for a retry, settled by ${until}.`);
  assert.equal(retriesLine(1, 1, until), `1 done; 1 waits for a retry, settled by ${until}.`);
});

describe("providers pacing a task", () => {
  const now = Date.parse("2026-11-29T10:00:00Z");
  const gmail = {
    name: "Gmail",
    pending: 412,
    rate_per_minute: 70,
    expected_done_at: "2026-11-29T10:05:53Z",
  };

  test("say who paces, how many wait, and about how long", () => {
    assert.equal(pacedLine(gmail, now), "Gmail: 412 addresses at the pace it allows, about 6 min.");
    assert.equal(
      pacedLine({ ...gmail, pending: 1, expected_done_at: "2026-11-29T10:00:20Z" }, now),
      "Gmail: 1 address at the pace it allows, less than a minute.",
    );
    assert.equal(
      pacedLine({ ...gmail, rate_per_minute: null, expected_done_at: null }, now),
      "Gmail: 412 addresses wait while we learn the pace it allows.",
    );
  });

  test("the estimate is the later of the rest at the observed rate and each provider's pace", () => {
    assert.equal(etaWithPacesMs(60_000, [gmail], now), 353_000);
    assert.equal(etaWithPacesMs(900_000, [gmail], now), 900_000);
    assert.equal(etaWithPacesMs(null, [gmail], now), 353_000);
    // A pace still being learnt gives no time: the rest's estimate stands.
    assert.equal(etaWithPacesMs(60_000, [{ ...gmail, expected_done_at: null }], now), 60_000);
    assert.equal(etaWithPacesMs(null, [], now), null);
  });
});
