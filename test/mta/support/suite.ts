// One MTA's scenarios as node:test tests: each runs the engine against the real MTA, scores the
// answers against the truth, counts the sessions the MTA logged, and adds a row to the MTA's
// table (printed, and appended to the lab's report, when the file ends).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Engine, EngineOptions, VerificationResult } from "../../../src/verify/index.ts";
import {
  findLab,
  interleave,
  numbered,
  labEngine,
  LogWindow,
  mailboxes,
  publish,
  renderTable,
  score,
  settledLines,
  truth,
  type Lab,
  type LabMta,
  type LogDialect,
  type Row,
} from "./lab.ts";

export interface ScenarioContext {
  lab: Lab;
  engine: Engine;
  /** `valid` for an existing mailbox, `invalid` otherwise. */
  truth: (address: string) => VerificationResult["status"];
}

export interface Scenario {
  name: string;
  engine?: Partial<EngineOptions>;
  run(ctx: ScenarioContext): Promise<VerificationResult[]>;
  /** The status each address must get; default: the truth. */
  want?: (ctx: ScenarioContext) => (address: string) => VerificationResult["status"];
  /** Answers tolerated besides the wanted status (counted as not right, but no failure). */
  tolerate?: (result: VerificationResult) => boolean;
  /** Further checks on the results and the MTA's log lines of this scenario. */
  check?(results: VerificationResult[], lines: string[], ctx: ScenarioContext): void;
  /** Text for the table's notes column (default: the misses' statuses). */
  notes?(results: VerificationResult[], lines: string[]): string;
}

export interface MtaSuite {
  title: string;
  /** Which lab MTA's log to read (several Postfix listeners share one log). */
  log: (lab: Lab) => string;
  dialect: LogDialect;
  /** Log lines that must never appear about our sessions. */
  forbidden: { pattern: RegExp; what: string }[];
  /** Strips what varies (time, pids, ports, queue ids) so notable lines group. */
  normalize: (line: string) => string;
  scenarios: (lab: Lab) => Scenario[];
}

/**
 * The scenarios every MTA gets. `missing` names the MTA's reply for an unknown mailbox;
 * `serverType` is what the engine must detect from the banner/EHLO, when it knows the MTA.
 */
export function commonScenarios(
  label: string,
  mta: LabMta,
  missing: string,
  serverType?: string,
): Scenario[] {
  const d = mta.domain;
  const identified = (results: VerificationResult[]): void => {
    for (const r of results) {
      assert.equal(r.hostName, mta.host, r.email);
      if (serverType !== undefined) assert.equal(r.serverType, serverType, r.email);
    }
  };
  return [
    {
      name: `${label}: one mailbox → valid`,
      run: async ({ engine }) => [await engine.verifyOne(`alice@${d}`)],
      check: identified,
    },
    {
      name: `${label}: one missing mailbox (${missing}) → invalid`,
      run: async ({ engine }) => [await engine.verifyOne(`nobody.here@${d}`)],
    },
    {
      name: `${label}: 60 addresses in one group, 30 of them missing (errors past the limits)`,
      run: ({ engine }) =>
        engine.verifyGroup(d, interleave(numbered("user", 30, d), numbered("ghost", 30, d))),
      check: identified,
    },
    {
      name: `${label}: 40 mailboxes in one group (past the recipient limit 20, no errors)`,
      run: ({ engine }) => engine.verifyGroup(d, numbered("user", 40, d)),
    },
    {
      name: `${label}: 30 missing addresses in one group`,
      run: ({ engine }) => engine.verifyGroup(d, numbered("dead", 30, d)),
    },
  ];
}

/**
 * One existing mailbox refused by a per-recipient rule (a personal block entry) among mailboxes
 * the server accepts and one it does not know. The refusal is not the server's answer for a
 * missing mailbox (the random probe's), so it says nothing about existence: `unknown`, never
 * `invalid`. `reply` is what the MTA sends for it.
 */
export function recipientBlockScenario(label: string, lab: Lab, mta: LabMta, reply: string): Scenario {
  const d = mta.domain;
  const blocked = `${lab.recipientBlock.localPart}@${d}`;
  return {
    name: `${label}: one mailbox refused by a per-recipient block (${reply}) → unknown, never invalid`,
    run: ({ engine }) => engine.verifyGroup(d, [`alice@${d}`, blocked, `user01@${d}`, `ghost01@${d}`]),
    want:
      ({ truth }) =>
      (address) =>
        address === blocked ? "unknown" : truth(address),
    check: (_results, lines) => {
      const refused = lines.filter((l) => l.includes(blocked) && l.includes(lab.recipientBlock.text));
      assert.ok(refused.length > 0, `${label} logged no refusal of ${blocked} by the block`);
    },
    notes: (results) => {
      const r = results.find((x) => x.email === blocked);
      if (r === undefined) return `no answer for ${blocked}`;
      return `${lab.recipientBlock.localPart}: ${r.status}/${String(r.unknownReason)} (${r.evidence})`;
    },
  };
}

const SCENARIO_TIMEOUT_MS = 120_000;
/** An engine call that takes longer than this has hung (the slowest scenario needs ~15 s). */
const ANSWER_DEADLINE_MS = 30_000;
const CLOSE_DEADLINE_MS = 10_000;

/** Rejects when `promise` has not settled in `ms`; keeps the event loop alive meanwhile. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms.toString()} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** "unknown/smtp_timeout ×3, invalid ×1": what the misses got. */
function missSummary(results: readonly VerificationResult[], want: (a: string) => string): string {
  const counts = new Map<string, number>();
  for (const r of results) {
    if (r.status === want(r.email)) continue;
    const key = r.status === "unknown" ? `unknown/${String(r.unknownReason)}` : r.status;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${k} ×${n.toString()}`).join(", ");
}

export async function defineMtaSuite(suite: MtaSuite): Promise<void> {
  const found = await findLab();
  if ("skip" in found) {
    void test(`${suite.title}: real-MTA scenarios`, { skip: found.skip }, () => undefined);
    return;
  }
  const lab = found.lab;
  const boxes = mailboxes(lab);
  const rows: Row[] = [];
  let whole: LogWindow;
  const notable: string[] = [];
  const closeFailures: string[] = [];

  before(() => {
    whole = new LogWindow(suite.log(lab));
  });
  after(() => {
    publish(lab, renderTable(suite.title, rows, notable));
  });

  for (const scenario of suite.scenarios(lab)) {
    void test(scenario.name, { timeout: SCENARIO_TIMEOUT_MS }, async () => {
      const window = new LogWindow(suite.log(lab));
      const engine = labEngine(lab, scenario.engine);
      const ctx: ScenarioContext = { lab, engine, truth: truth(boxes) };
      let results: VerificationResult[];
      // A hung engine must fail this scenario, not freeze the file: the deadlines keep a timer
      // alive (a promise nothing will settle would otherwise end the run with no verdict).
      try {
        results = await within(scenario.run(ctx), ANSWER_DEADLINE_MS, "engine");
      } catch (error) {
        const lines = await settledLines(window, suite.dialect);
        rows.push({
          scenario: scenario.name,
          right: 0,
          total: -1,
          sessions: lines.filter((l) => suite.dialect.opened.test(l)).length,
          notes: error instanceof Error ? error.message : String(error),
        });
        for (const l of lines) if (suite.dialect.notable.test(l)) notable.push(suite.normalize(l));
        throw error;
      } finally {
        await within(engine.close(), CLOSE_DEADLINE_MS, "engine.close()").catch((error: unknown) => {
          closeFailures.push(`${scenario.name}: ${String(error)}`);
        });
      }
      const lines = await settledLines(window, suite.dialect);
      const want = (scenario.want ?? ((c: ScenarioContext) => c.truth))(ctx);
      const scored = score(results, want);
      const sessions = lines.filter((l) => suite.dialect.opened.test(l)).length;
      for (const l of lines) if (suite.dialect.notable.test(l)) notable.push(suite.normalize(l));
      rows.push({
        scenario: scenario.name,
        right: scored.right,
        total: scored.total,
        sessions,
        notes: scenario.notes?.(results, lines) ?? missSummary(results, want),
      });
      // Wrong answers and the scenario's own checks are reported together.
      const tolerated = new Set(results.filter((r) => scenario.tolerate?.(r) === true).map((r) => r.email));
      const failures = scored.misses
        .filter((m) => !tolerated.has(m.slice(0, m.indexOf(": "))))
        .map((m) => `wrong answer: ${m}`);
      try {
        scenario.check?.(results, lines, ctx);
      } catch (error) {
        failures.push(`check: ${error instanceof Error ? error.message : String(error)}`);
      }
      assert.deepEqual(failures, [], scenario.name);
    });
  }

  void test(`${suite.title}: every engine closed (sessions QUIT) in time`, () => {
    assert.deepEqual(closeFailures, []);
  });

  void test(`${suite.title}: the MTA logged nothing against our sessions`, async () => {
    const lines = await settledLines(whole, suite.dialect);
    for (const { pattern, what } of suite.forbidden) {
      const hits = lines.filter((l) => pattern.test(l));
      assert.deepEqual(hits, [], `${suite.title} logged ${what}`);
    }
  });
}
