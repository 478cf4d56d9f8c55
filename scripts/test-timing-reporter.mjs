// A second reporter for `npm test` / `npm run test:pg`: after the run, the files that took longest,
// so that where CI time goes is read off every run instead of guessed. The figure is the file's own
// run as its process reports it (from its first test to its last; module loading and process
// start-up are not in it): the runner replays each file's events in file order, so their arrival
// times say nothing about when the file ran.
import { relative } from "node:path";

const SHOWN = 15;

export default async function* fileTimingReporter(source) {
  const took = [];
  for await (const event of source) {
    if (event.type === "test:summary" && event.data.file) {
      took.push({ file: relative(process.cwd(), event.data.file), ms: event.data.duration_ms });
    }
  }
  if (took.length < 2) return;
  took.sort((a, b) => b.ms - a.ms);
  const total = took.reduce((sum, t) => sum + t.ms, 0);
  yield `\nslowest test files (seconds in the file's tests; ${took.length.toString()} files, ${(total / 1000).toFixed(0)} s in all):\n`;
  for (const { file, ms } of took.slice(0, SHOWN)) yield `  ${(ms / 1000).toFixed(1).padStart(6)}  ${file}\n`;
}
