// The yes/no question of src/cli/confirm.ts, on streams standing in for the terminal.
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { test } from "node:test";
import { askYesNo, isYes } from "../../../src/cli/confirm.ts";

test("y and yes in any case are yes; anything else, the empty default included, is no", () => {
  for (const line of ["y", "Y", "yes", "YES", " yes "]) assert.equal(isYes(line), true, line);
  for (const line of ["", "n", "no", "yep", "y y", "ok"]) assert.equal(isYes(line), false, line);
});

async function ask(typed: string | null): Promise<{ answer: string; shown: string }> {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = "";
  output.on("data", (d: Buffer) => (shown += d.toString()));
  const answer = askYesNo("Upload list.csv and reserve 4 credits?", input, output);
  if (typed === null) input.end();
  else input.write(typed);
  return { answer: await answer, shown };
}

test("the question is asked with its default, and the typed line is the answer", async () => {
  const yes = await ask("y\n");
  assert.equal(yes.answer, "yes");
  assert.match(yes.shown, /^Upload list\.csv and reserve 4 credits\? \[y\/N\] /);
  assert.equal((await ask("\n")).answer, "no", "Enter alone takes the default");
  assert.equal((await ask("nope\n")).answer, "no");
});

test("the end of the input (Ctrl-D) is no, on a line of its own", async () => {
  const eof = await ask(null);
  assert.equal(eof.answer, "no");
  assert.match(eof.shown, /\[y\/N\] \r?\n$/, "the next message starts on a new line");
});
