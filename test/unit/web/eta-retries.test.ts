// Issue 21 item 2: the task page's time left with addresses waiting for a server's retry.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  addSample,
  etaWithoutRetriesMs,
  formatUntil,
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

test("retriesLine and formatUntil: '1,536 done; 98 wait for retries until 10:25'", () => {
  const now = new Date(2026, 10, 26, 9, 50);
  const until = formatUntil(new Date(2026, 10, 26, 10, 25).toISOString(), now);
  assert.match(until, /^10:25/);
  assert.ok(!until.includes("2026"), until);
  assert.match(
    formatUntil(new Date(2026, 10, 27, 10, 25).toISOString(), now),
    /2026/,
    "another day has its date",
  );
  assert.equal(
    retriesLine(1_536, 98, until),
    `${(1_536).toLocaleString()} done; 98 wait for retries until ${until}.`,
  );
  assert.equal(retriesLine(1, 1, until), `1 done; 1 waits for a retry until ${until}.`);
});
