// The CLI's progress indicator with a pinned clock and a captured stream: redraws on a terminal
// are throttled to 10 a second; off a terminal, a line per 10 % step at most once a second.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createProgress, formatDuration } from "../../../src/cli/progress.ts";

function capture(): { stream: NodeJS.WritableStream; text: () => string } {
  let text = "";
  const stream = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
  return { stream, text: () => text };
}

void test("terminal: one line redrawn with \\r, at most every 100 ms, then a final line", () => {
  let now = 0;
  const out = capture();
  const p = createProgress({
    total: 100,
    unit: "addresses",
    label: "verifying",
    stream: out.stream,
    tty: true,
    now: () => now,
  });
  for (let i = 1; i <= 100; i++) {
    now += 10; // 100 updates over one second
    p.update(i);
  }
  p.finish();
  p.finish();
  const draws = out.text().split("\r").length - 1;
  assert.ok(draws >= 9 && draws <= 12, `about 10 redraws + the final one, got ${draws}`);
  const text = out.text();
  assert.ok(text.endsWith("\u001b[K\n"), "clears the rest of the line, ends it");
  assert.match(text, /\rverifying \[#{10,}\] 100\/100 addresses 100% 100\/s in 0:01/);
  assert.equal(out.text().split("\n").length, 2, "a single line, ended once");
});

void test("not a terminal: plain lines per 10 % step, at most once a second, and a final line", () => {
  let now = 0;
  const out = capture();
  const p = createProgress({
    total: 1000,
    unit: "addresses",
    label: "verifying",
    stream: out.stream,
    tty: false,
    now: () => now,
  });
  for (let i = 1; i <= 1000; i++) {
    now += 20; // 20 s in all
    p.update(i);
  }
  p.finish();
  const lines = out.text().trimEnd().split("\n");
  assert.doesNotMatch(out.text(), /\r/);
  assert.ok(lines.length >= 10 && lines.length <= 12, lines.join("\n"));
  assert.match(lines.at(-1)!, /^verifying: 1000\/1000 addresses 100% 50\/s in 0:20$/);
});

void test("ETA and durations", () => {
  assert.equal(formatDuration(7_000), "0:07");
  assert.equal(formatDuration(205_000), "3:25");
  assert.equal(formatDuration(3_723_000), "1:02:03");
  let now = 0;
  const out = capture();
  const p = createProgress({
    total: 10,
    unit: "x",
    label: "l",
    stream: out.stream,
    tty: false,
    now: () => now,
  });
  now = 2_000;
  p.update(5);
  assert.match(out.text(), /5\/10 x {2}50% 2\.5\/s ETA 0:02/);
});

void test('not a terminal, plainLines "changes": a line per change of the counts, at most every 5 s, none while nothing moves', () => {
  let now = 0;
  const out = capture();
  const p = createProgress({
    total: 100,
    unit: "addresses",
    label: "verifying",
    stream: out.stream,
    tty: false,
    now: () => now,
    plainLines: "changes",
  });
  const poll = (done: number): void => {
    now += 1_000; // one poll a second
    p.update(done);
  };
  poll(10); // first: printed
  for (let i = 0; i < 30; i++) poll(10); // stuck at 10 (a greylisting domain): silent
  assert.equal(out.text().split("\n").length - 1, 1, out.text());
  poll(11); // a change after 30 s: printed at once
  poll(12); // 1 s later: held back by the 5 s bound …
  poll(12);
  poll(12);
  poll(12);
  poll(12); // … and printed once the 5 s are over, although it changed 5 polls ago
  poll(92);
  p.finish();
  const lines = out.text().trimEnd().split("\n");
  assert.deepEqual(
    lines.map((l) => /(\d+)\/100/.exec(l)?.[1]),
    ["10", "11", "12", "92"],
    out.text(),
  );
  assert.doesNotMatch(out.text(), /\r/);
});
