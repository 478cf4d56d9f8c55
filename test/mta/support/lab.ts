// The real-MTA lab as the tests see it: the facts `scripts/mta-lab.sh up` wrote to lab.json, the
// truth (which mailboxes exist), an engine pointed at the lab's DNS, and the MTAs' own logs.
import { appendFileSync, existsSync, readFileSync, statSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import {
  createEngine,
  type Engine,
  type EngineOptions,
  type VerificationResult,
} from "../../../src/verify/index.ts";

export interface LabMta {
  domain: string;
  host: string;
  address: string;
  log: string;
}

export interface Lab {
  dir: string;
  dns: string;
  egress: string;
  heloName: string;
  mailFrom: string;
  mailboxes: string;
  /** One existing mailbox that Postfix (pf.lab.test) and Exim refuse by a per-recipient rule, and the rule's text. */
  recipientBlock: { localPart: string; text: string };
  postfix: LabMta;
  postfixTls: LabMta;
  postfixRate: LabMta & { recipientRateLimit: number };
  postfixGrey: LabMta & { greylistDelaySeconds: number };
  exim: LabMta;
  opensmtpd: LabMta;
  opensmtpdTls: LabMta;
}

const labDir = (): string => process.env.MTA_LAB_DIR ?? "/tmp/mailprobe-mta-lab";

/**
 * The running lab, or the reason there is none. The suite runs only against a lab that is up
 * (`npm run test:mta` brings it up and down); `npm test` also finds these files and skips them.
 */
export async function findLab(): Promise<{ lab: Lab } | { skip: string }> {
  const file = join(labDir(), "lab.json");
  const hint = "MTA lab not running: use `npm run test:mta` (or scripts/mta-lab.sh up)";
  if (!existsSync(file)) return { skip: hint };
  const lab = JSON.parse(readFileSync(file, "utf8")) as Lab;
  const [host, port] = lab.dns.split(":");
  const up = await new Promise<boolean>((resolve) => {
    const socket = connect({ host: host ?? "", port: Number(port), timeout: 500 });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(false));
  });
  return up ? { lab } : { skip: hint };
}

/** Local parts that exist in every lab domain. */
export function mailboxes(lab: Lab): Set<string> {
  return new Set(
    readFileSync(lab.mailboxes, "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#")),
  );
}

export function labEngine(lab: Lab, overrides: Partial<EngineOptions> = {}): Engine {
  return createEngine({
    dnsServers: [lab.dns],
    dnsTimeoutMs: 1000,
    dnsTries: 1,
    smtpPort: 25,
    smtpHeloName: lab.heloName,
    smtpMailFrom: lab.mailFrom,
    smtpConnectTimeoutMs: 2000,
    smtpGreetingTimeoutMs: 5000,
    // Postfix delays every reply by 1 s past its soft error limit.
    smtpCommandTimeoutMs: 5000,
    // The lab's MTAs live on 127.0.3.x, which the outbound guard refuses by default.
    smtpAllowPrivateHosts: true,
    ...overrides,
  });
}

/** n addresses `${prefix}01@domain` … */
export const numbered = (prefix: string, n: number, domain: string): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i + 1).padStart(2, "0")}@${domain}`);

/** Alternates the two lists: a, b, a, b, … */
export function interleave(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i < a.length) out.push(a[i]!);
    if (i < b.length) out.push(b[i]!);
  }
  return out;
}

export interface Scored {
  right: number;
  total: number;
  /** "address: want X got Y/reason" for every miss. */
  misses: string[];
}

/** Compares results with the truth (`valid` when the local part is a mailbox, else `invalid`). */
export function score(
  results: readonly VerificationResult[],
  want: (address: string) => VerificationResult["status"],
): Scored {
  const misses: string[] = [];
  for (const r of results) {
    const w = want(r.email);
    // `evidence` (what decided the status) where the engine reports it.
    const evidence = (r as { evidence?: unknown }).evidence;
    const why = typeof evidence === "string" && evidence !== "" ? ` (${evidence})` : "";
    if (r.status !== w) misses.push(`${r.email}: want ${w} got ${r.status}/${String(r.unknownReason)}${why}`);
  }
  return { right: results.length - misses.length, total: results.length, misses };
}

export const truth =
  (boxes: Set<string>) =>
  (address: string): VerificationResult["status"] =>
    boxes.has(address.slice(0, address.lastIndexOf("@"))) ? "valid" : "invalid";

/** A log file read from a mark onwards. */
export class LogWindow {
  private start: number;
  constructor(readonly file: string) {
    this.start = LogWindow.size(file);
  }
  private static size(file: string): number {
    return existsSync(file) ? statSync(file).size : 0;
  }
  text(): string {
    if (!existsSync(this.file)) return "";
    return readFileSync(this.file).subarray(this.start).toString("utf8");
  }
  lines(): string[] {
    return this.text()
      .split("\n")
      .filter((l) => l !== "");
  }
}

/** How one MTA logs the start and the end of an SMTP session, and the trouble we look for. */
export interface LogDialect {
  /** Lines that open a session from us. */
  opened: RegExp;
  /** Lines that close one (QUIT or otherwise). */
  closed: RegExp;
  /** Lines about our sessions worth showing in the report. */
  notable: RegExp;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits (≤ 5 s) until the MTA logged the end of every session it logged the start of. */
export async function settledLines(window: LogWindow, dialect: LogDialect): Promise<string[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const lines = window.lines();
    const opened = lines.filter((l) => dialect.opened.test(l)).length;
    const closed = lines.filter((l) => dialect.closed.test(l)).length;
    if (closed >= opened || Date.now() > deadline) return lines;
    await sleep(100);
  }
}

export interface Row {
  scenario: string;
  right: number;
  /** -1: the engine gave no answer. */
  total: number;
  sessions: number;
  notes: string;
}

/** Fixed-width table of rows, plus the notable log lines (deduplicated, counted). */
export function renderTable(title: string, rows: readonly Row[], notable: readonly string[]): string {
  const head = ["scenario", "right/total", "sessions", "notes"];
  const body = rows.map((r) => [
    r.scenario,
    r.total < 0 ? "no answer" : `${r.right.toString()}/${r.total.toString()}`,
    r.sessions.toString(),
    r.notes,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ");
  const counts = new Map<string, number>();
  for (const n of notable) counts.set(n, (counts.get(n) ?? 0) + 1);
  const out = [
    `== ${title}`,
    line(head),
    widths.map((w) => "-".repeat(w)).join("-|-"),
    ...body.map(line),
    `MTA log about our sessions${counts.size === 0 ? ": nothing notable" : ":"}`,
    ...[...counts].map(([text, n]) => `  ${n.toString().padStart(3)} × ${text}`),
    "",
  ];
  return out.join("\n");
}

/** Prints the table and appends it to the lab's report (scripts/mta-lab.sh test prints it at the end). */
export function publish(lab: Lab, table: string): void {
  console.log(table);
  appendFileSync(join(lab.dir, "log", "report.txt"), `${table}\n`);
}
