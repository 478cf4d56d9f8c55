// The layer allow-list of DESIGN.md §4 (eslint.config.js) on the real ESLint config: each case
// lints a one-line import as if it were an existing file of that folder (lintText: nothing is
// written into src/) and checks what no-restricted-imports says. Rerun alone with
// `node --import tsx --test test/unit/lint/boundaries.test.ts`; `npx eslint .` checks the tree.
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { before, describe, test } from "node:test";
import { ESLint } from "eslint";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

interface Case {
  /** An existing file: the project service type-checks the given text in its place. */
  file: string;
  from: string;
  /** A fragment of the expected message, or null when the import is allowed. */
  denied: string | null;
}

const CASES: Case[] = [
  { file: "src/verify/index.ts", from: "../db/client.ts", denied: "verify/ may import only lib/" },
  { file: "src/verify/index.ts", from: "../observability/logger.ts", denied: "not observability/" },
  { file: "src/verify/index.ts", from: "../lib/clock.ts", denied: null },
  { file: "src/verify/smtp/session.ts", from: "../../tasks/service.ts", denied: "not tasks/" },
  { file: "src/lib/clock.ts", from: "../verify/index.ts", denied: "lib/ may import only nothing" },
  { file: "src/db/client.ts", from: "../tasks/service.ts", denied: "db/ may import only lib/, verify/" },
  { file: "src/db/open.ts", from: "pg", denied: "Only db/pglite.ts and db/postgres*.ts" },
  { file: "src/db/postgres.ts", from: "pg", denied: null },
  { file: "src/files/index.ts", from: "../db/client.ts", denied: "files/ may import only lib/, verify/" },
  { file: "src/tasks/service.ts", from: "../http/errors.ts", denied: "not http/" },
  { file: "src/tasks/service.ts", from: "../app/services.ts", denied: "not app/" },
  { file: "src/tasks/service.ts", from: "../cli/main.ts", denied: "not cli/" },
  { file: "src/tasks/service.ts", from: "fastify", denied: "Only http/ and app/ import Fastify" },
  { file: "src/tasks/service.ts", from: "../credits/service.ts", denied: null },
  { file: "src/credits/service.ts", from: "../tasks/service.ts", denied: "not tasks/" },
  { file: "src/http/routes/health.ts", from: "../../db/client.ts", denied: "not db/" },
  { file: "src/http/routes/health.ts", from: "../../app/services.ts", denied: "not app/" },
  { file: "src/http/routes/health.ts", from: "../../config/index.ts", denied: "not config/" },
  { file: "src/http/routes/health.ts", from: "../../tasks/service.ts", denied: null },
  { file: "src/http/deps.ts", from: "../jobs/runner.ts", denied: "not jobs/" },
  // The old cycle jobs → tasks → webhooks → jobs: the pool gets the task layer as a port.
  { file: "src/jobs/runner.ts", from: "../tasks/finish-task.ts", denied: "not tasks/" },
  // The queue imports no use case: results reach tasks/ through the GroupRecorder port.
  { file: "src/jobs/runner.ts", from: "../realtime/service.ts", denied: "not realtime/" },
  { file: "src/tasks/record-group.ts", from: "../jobs/outcomes.ts", denied: null },
  { file: "src/webhooks/dispatcher.ts", from: "../jobs/backoff.ts", denied: "not jobs/" },
  { file: "src/tasks/finish-task.ts", from: "../webhooks/outbox.ts", denied: null },
  { file: "src/jobs/runner.ts", from: "../politeness/host-gate.ts", denied: null },
  { file: "src/net/address-policy.ts", from: "../db/client.ts", denied: "net/ may import only lib/" },
  { file: "src/app/services.ts", from: "../cli/main.ts", denied: "not cli/" },
  { file: "src/app/services.ts", from: "../db/client.ts", denied: null },
  { file: "src/cli/main.ts", from: "../http/errors.ts", denied: "not http/" },
  { file: "src/cli/main.ts", from: "../app/serve.ts", denied: null },
  // verify/ is reached through its index only: its files move and split without touching callers.
  { file: "src/doctor/doctor.ts", from: "../verify/smtp/session.ts", denied: "only through verify/index.ts" },
  { file: "src/politeness/host-gate.ts", from: "../verify/index.ts", denied: null },
];

describe("layer allow-list (eslint.config.js, DESIGN.md §4)", () => {
  let eslint: ESLint;
  before(() => {
    eslint = new ESLint({ cwd: ROOT });
  });

  test("every folder under src/ has a row (its own no-restricted-imports list)", async () => {
    const folders = readdirSync(`${ROOT}src`, { withFileTypes: true }).filter((e) => e.isDirectory());
    assert.ok(folders.length > 10);
    for (const { name } of folders) {
      const config = (await eslint.calculateConfigForFile(`${ROOT}src/${name}/any.ts`)) as {
        rules: Record<string, [string, { patterns: unknown[] }]>;
      };
      const rule = config.rules["no-restricted-imports"];
      assert.ok(rule, `src/${name}/ has no boundary rule`);
      assert.ok(rule[1].patterns.length > 0, `src/${name}/ denies nothing`);
    }
  });

  for (const c of CASES) {
    const verdict = c.denied === null ? "may" : "may not";
    test(`${c.file} ${verdict} import ${c.from}`, async () => {
      // A type-only import of everything keeps the snippet valid whatever the module exports.
      const code = `import type * as imported from "${c.from}";\nexport type Imported = typeof imported;\n`;
      const [result] = await eslint.lintText(code, { filePath: `${ROOT}${c.file}` });
      assert.ok(result);
      assert.deepEqual(
        result.messages.filter((m) => m.fatal),
        [],
        "the snippet must parse",
      );
      const boundary = result.messages.filter((m) => m.ruleId === "no-restricted-imports");
      if (c.denied === null) {
        assert.deepEqual(boundary, []);
      } else {
        assert.equal(boundary.length, 1, `expected one boundary error, got ${JSON.stringify(boundary)}`);
        assert.match(boundary[0]!.message, new RegExp(c.denied.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")));
      }
    });
  }
});
