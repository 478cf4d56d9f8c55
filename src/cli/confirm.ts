// A yes/no question on the terminal, for a command about to spend something (`client upload`
// asks before it reserves credits). Only asked when stdin is a terminal: a script or a CI job has
// nobody to answer, and a question there would hang it or read its input as the answer.
import { createInterface } from "node:readline/promises";

/** The answer: yes or no, or Ctrl-C (the caller exits 130, as a shell does after SIGINT). */
export type Answer = "yes" | "no" | "interrupted";

/** "y" or "yes" in any case; anything else, an empty line (the default) included, is no. */
export const isYes = (line: string): boolean => /^\s*y(es)?\s*$/i.test(line);

/**
 * Asks `question` (followed by " [y/N] ") on `output` and reads one line from `input`. The end of
 * the input (Ctrl-D) is no. Ctrl-C is "interrupted": readline in terminal mode turns it into an
 * event, not the signal, so without this the question would wait on.
 */
export async function askYesNo(
  question: string,
  input: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin,
  output: NodeJS.WritableStream = process.stderr,
): Promise<Answer> {
  const rl = createInterface({ input, output, terminal: input.isTTY === true });
  const stop = new AbortController();
  let interrupted = false;
  rl.once("SIGINT", () => {
    interrupted = true;
    stop.abort();
  });
  rl.once("close", () => stop.abort());
  try {
    const line = await rl.question(`${question} [y/N] `, { signal: stop.signal });
    return isYes(line) ? "yes" : "no";
  } catch (error) {
    // readline ends the prompt's line itself when the question is aborted.
    if (!stop.signal.aborted) throw error;
    return interrupted ? "interrupted" : "no";
  } finally {
    rl.close();
  }
}
