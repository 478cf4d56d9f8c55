// Delimiter detection. Excel writes "," or, in locales whose decimal mark is a comma (de, fr,
// es, it, nl, pt…), ";"; "Text (tab delimited)" gives tabs. Counting is done outside quotes on the
// first lines, and the delimiter that splits most lines into the same number of fields wins.
import { addressOf } from "./table.ts";

/** A csv field delimiter. */
export type Delimiter = "," | ";" | "\t";

const CANDIDATES: readonly Delimiter[] = [",", ";", "\t"];
const SAMPLE_CHARS = 64 * 1024;
const SAMPLE_LINES = 50;

/** Excel's "sep=;" first line, which names the delimiter explicitly. */
export function explicitDelimiter(text: string): { delimiter: Delimiter; skip: number } | null {
  const match = /^sep=(,|;|\t)[ \t]*(\r\n|\n|\r|$)/i.exec(text);
  if (!match) return null;
  return { delimiter: match[1] as Delimiter, skip: match[0].length };
}

interface LineCounts {
  counts: Record<Delimiter, number>;
  text: string;
}

/** Logical lines of the sample (a newline inside quotes does not end one), with counts per delimiter. */
function sampleLines(text: string): LineCounts[] {
  const lines: LineCounts[] = [];
  const fresh = (): Record<Delimiter, number> => ({ ",": 0, ";": 0, "\t": 0 });
  let counts = fresh();
  let start = 0;
  let inQuotes = false;
  const end = Math.min(text.length, SAMPLE_CHARS);
  for (let i = 0; i < end && lines.length < SAMPLE_LINES; i += 1) {
    const ch = text[i];
    if (ch === '"') inQuotes = !inQuotes;
    else if (inQuotes) continue;
    else if (ch === "," || ch === ";" || ch === "\t") counts[ch] += 1;
    else if (ch === "\n" || ch === "\r") {
      const line = text.slice(start, i);
      if (line.trim() !== "") lines.push({ counts, text: line });
      counts = fresh();
      start = i + 1;
    }
  }
  // The last line counts only when the whole text was sampled (otherwise it may be cut short).
  if (end === text.length && !inQuotes && lines.length < SAMPLE_LINES) {
    const line = text.slice(start, end);
    if (line.trim() !== "") lines.push({ counts, text: line });
  }
  return lines;
}

interface Score {
  delimiter: Delimiter;
  consistent: number;
  mode: number;
  addresses: number;
}

function scoreOf(delimiter: Delimiter, lines: readonly LineCounts[]): Score {
  const frequency = new Map<number, number>();
  for (const l of lines) frequency.set(l.counts[delimiter], (frequency.get(l.counts[delimiter]) ?? 0) + 1);
  let mode = 0;
  let consistent = 0;
  for (const [count, n] of frequency) {
    if (n > consistent || (n === consistent && count > mode)) {
      mode = count;
      consistent = n;
    }
  }
  if (mode === 0) return { delimiter, consistent: 0, mode: 0, addresses: 0 };
  // Tie-breaker: "john@x.com;Doe, John" has one "," and one ";"; only ";" yields an address.
  let addresses = 0;
  for (const l of lines)
    for (const cell of l.text.split(delimiter)) if (addressOf(cell.replace(/"/g, ""))) addresses += 1;
  return { delimiter, consistent, mode, addresses };
}

/** Picks the delimiter; "," when no candidate appears (a one-column file). */
export function detectDelimiter(text: string): Delimiter {
  const lines = sampleLines(text);
  const scores = CANDIDATES.map((d) => scoreOf(d, lines));
  let best = scores[0]!;
  for (const s of scores.slice(1)) {
    if (
      s.consistent > best.consistent ||
      (s.consistent === best.consistent &&
        (s.mode > best.mode || (s.mode === best.mode && s.addresses > best.addresses)))
    ) {
      best = s;
    }
  }
  return best.consistent > 0 ? best.delimiter : ",";
}
