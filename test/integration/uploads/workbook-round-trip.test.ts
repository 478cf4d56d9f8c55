// An xlsx made by a second writer (openpyxl, Debian's python3-openpyxl) uploaded, verified
// against the mail-world simulator and downloaded: the download is the user's own workbook.
// openpyxl reads both files back and compares every original cell's value, type and number
// format, every sheet and every column width; the result columns come after the list's. The
// addresses come back as written (mixed case) in xlsx, csv and txt.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createWorkerRole, type WorkerRole } from "../../../src/app/worker-role.ts";
import { RESULT_COLUMNS } from "../../../src/files/index.ts";
import { waitForTaskFinished, worldEnv } from "../../support/batch.ts";
import { startMailWorld, type MailWorld } from "../../support/mail-world/index.ts";
import { multipart } from "../../support/multipart.ts";
import { createTestContext, type TestContext, type TestUser } from "../../support/test-app.ts";

const SCRIPT = new URL("../../support/openpyxl-workbook.py", import.meta.url).pathname;
// Debian's interpreter, where python3-openpyxl installs (a python3 earlier on PATH may lack it).
const PYTHON = ["/usr/bin/python3", "python3"].find(
  (p) => spawnSync(p, ["-c", "import openpyxl"], { stdio: "ignore" }).status === 0,
);
const SHEET = "Contacts";

interface Comparison {
  sheets: string[];
  original_sheets: string[];
  differences: unknown[];
  cells: number;
  formulas_left_out: number;
  list_rows: number;
  added_header: string[];
  added_widths: number[];
  first_column: string[];
}

let world: MailWorld;
let ctx: TestContext;
let role: WorkerRole;
let dir: string;
let user: TestUser;
let taskId: string;
let original: string;

function compare(download: Buffer, kept: number[] | null): Comparison {
  const path = join(dir, `download-${String(Math.random()).slice(2)}.xlsx`);
  writeFileSync(path, download);
  const out = execFileSync(PYTHON!, [SCRIPT, "compare", original, path, SHEET, JSON.stringify(kept)], {
    encoding: "utf8",
    timeout: 60_000,
  });
  return JSON.parse(out) as Comparison;
}

async function download(query: string): Promise<Buffer> {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/api/v1/tasks/${taskId}/download${query}`,
    headers: ctx.bearer(user.apiKey),
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.rawPayload;
}

describe(
  "an openpyxl workbook round trip",
  { skip: PYTHON ? false : "python3-openpyxl is not installed" },
  () => {
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), "mailprobe-workbook-"));
      original = join(dir, "crm.xlsx");
      execFileSync(PYTHON!, [SCRIPT, "make", original], { timeout: 60_000 });
      world = await startMailWorld({
        domains: [
          {
            name: "acme.test",
            hosts: [{ name: "mx1.acme.test", kind: "postfix" }],
            mailboxes: ["alice", "bob", "carol"],
          },
          { name: "catch.test", hosts: [{ name: "mx.catch.test" }], catchAll: true },
        ],
      });
      ctx = await createTestContext({ env: worldEnv(world) });
      role = createWorkerRole(ctx.services);
      role.start();
      user = await ctx.createUser(100);
      const form = multipart([{ name: "file", filename: "CRM export.xlsx", data: readFileSync(original) }]);
      const res = await ctx.app.inject({
        method: "POST",
        url: "/api/v1/tasks/batch/upload",
        headers: { ...ctx.bearer(user.apiKey), "content-type": form.contentType },
        payload: form.payload,
      });
      assert.equal(res.statusCode, 202, res.body);
      taskId = res.json<{ task_id: string }>().task_id;
      await waitForTaskFinished(ctx.db, taskId, 60_000);
    });

    after(async () => {
      await role?.stop(1000);
      await ctx?.close();
      await world?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("every sheet, cell value, type, number format and width as uploaded; results appended", async () => {
      const report = compare(await download("?format=xlsx"), null);
      assert.deepEqual(report.sheets, ["Read me", "Contacts", "Summary"]);
      assert.deepEqual(report.sheets, report.original_sheets);
      assert.deepEqual(report.differences, []);
      assert.ok(report.cells >= 80, `compared ${String(report.cells)} cells`);
      // The list has its own "Email" column: the result columns are prefixed (docs/api.md, "An xlsx upload comes back as your workbook").
      assert.deepEqual(
        report.added_header,
        RESULT_COLUMNS.map((c) => `mailprobe_${c}`),
      );
      assert.ok(
        report.added_widths.every((w) => w >= 8 && w <= 60),
        JSON.stringify(report.added_widths),
      );
      assert.equal(report.list_rows, 8, "the blank row stays where it was");
    });

    test("a download of some statuses: only their rows, renumbered, every kept cell as uploaded", async () => {
      const report = compare(await download("?format=xlsx&status=valid"), [1, 2, 3, 8]);
      assert.deepEqual(report.differences, []);
      assert.deepEqual(report.sheets, report.original_sheets);
      assert.deepEqual(report.first_column, ["Email", "Alice@ACME.test", "bob@acme.test", "carol@acme.test"]);
      assert.equal(report.formulas_left_out, 3);
    });

    test("csv and txt give the addresses as written; the normalised one is in its own column", async () => {
      const csv = (await download("?format=csv")).toString("utf8");
      const alice = csv.split("\r\n").find((line) => line.startsWith("Alice@ACME.test,"));
      assert.ok(alice, csv.slice(0, 400));
      assert.ok(alice.includes(",alice@acme.test,valid,"), alice);
      const txt = (await download("?format=txt")).toString("utf8").trimEnd().split("\n");
      assert.deepEqual(txt, [
        "Alice@ACME.test,valid",
        "bob@acme.test,valid",
        "Nobody@Acme.Test,invalid",
        "Kim@Catch.TEST,catchall",
        "carol@acme.test,valid",
      ]);
    });
  },
);
