// Migrations (src/db/migrate.ts): idempotent re-runs, one transaction per file, and concurrent
// starters on PostgreSQL applying each migration exactly once.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test, type TestContext as NodeTestContext } from "node:test";
import type { Database } from "../../../src/db/client.ts";
import { loadMigrations, migrate, type Migration } from "../../../src/db/migrate.ts";
import { openPostgres } from "../../../src/db/postgres.ts";
import { openTestDatabase } from "../../support/test-db.ts";

const PG_URL = process.env.TEST_DATABASE_URL;

let db: Database;
let migrations: Migration[];
const opened: Database[] = [];
const schemas: string[] = [];
before(async () => {
  db = await openTestDatabase();
  migrations = await loadMigrations();
});
after(async () => {
  for (const d of opened) await d.close();
  if (PG_URL) for (const s of schemas) await db.query(`drop schema if exists ${s} cascade`);
  await db.close();
});

/** A connection string whose sessions all resolve unqualified names in `schema`. */
function urlWithSearchPath(base: string, schema: string): string {
  const url = new URL(base);
  url.searchParams.set("options", `-c search_path=${schema}`);
  return url.toString();
}

/**
 * An empty schema to migrate into, as a Database whose every session uses it: on PostgreSQL a pool
 * connecting with `search_path` set; on PGlite (one session) the file's own database, switched.
 */
async function freshSchemaDb(): Promise<{ schema: string; target: Database }> {
  const schema = `mig_${randomBytes(5).toString("hex")}`;
  await db.exec(`create schema ${schema}`);
  schemas.push(schema);
  if (PG_URL) {
    const target = openPostgres(urlWithSearchPath(PG_URL, schema), 2);
    opened.push(target);
    return { schema, target };
  }
  await db.exec(`set search_path to ${schema}`);
  return { schema, target: db };
}

async function appliedVersions(target: Database): Promise<number[]> {
  const { rows } = await target.query<{ version: number }>(
    "select version from schema_migrations order by version",
  );
  return rows.map((r) => r.version);
}

async function tablesIn(schema: string): Promise<string[]> {
  const { rows } = await db.query<{ table_name: string }>(
    "select table_name from information_schema.tables where table_schema = $1 order by table_name",
    [schema],
  );
  return rows.map((r) => r.table_name);
}

const allVersions = (): number[] => migrations.map((m) => m.version);

describe("migrate()", () => {
  test("the migration files are numbered, ordered and unique", () => {
    assert.ok(migrations.length >= 1);
    assert.equal(migrations[0]!.version, 1);
    const versions = allVersions();
    assert.deepEqual(
      versions,
      [...new Set(versions)].sort((a, b) => a - b),
    );
  });

  test("the test database is already migrated: a further run is a no-op", async () => {
    assert.deepEqual(await migrate(db), []);
  });

  test("into an empty schema: the first run applies everything, the second nothing", async () => {
    const { schema, target } = await freshSchemaDb();
    assert.deepEqual(await tablesIn(schema), []);
    assert.deepEqual(await migrate(target), allVersions());
    const tables = await tablesIn(schema);
    for (const t of ["schema_migrations", "users", "api_keys", "credit_transactions", "rate_limits"]) {
      assert.ok(tables.includes(t), `${t} created in ${schema}`);
    }
    assert.deepEqual(await migrate(target), []);
    assert.deepEqual(await appliedVersions(target), allVersions());
    assert.deepEqual(await tablesIn(schema), tables, "the second run changed nothing");
  });

  test("a failing migration rolls back entirely and is retried on the next run", async () => {
    const { schema, target } = await freshSchemaDb();
    const broken: Migration = {
      version: 9001,
      name: "9001_broken",
      sql: "create table half_done (id int);\nselect * from no_such_table;",
    };
    await assert.rejects(migrate(target, [...migrations, broken]));
    // The earlier files committed one by one; the broken one left neither its row nor its table.
    assert.deepEqual(await appliedVersions(target), allVersions());
    assert.ok(!(await tablesIn(schema)).includes("half_done"));

    const fixed: Migration = { ...broken, sql: "create table half_done (id int);" };
    assert.deepEqual(await migrate(target, [...migrations, fixed]), [9001]);
    assert.deepEqual(await appliedVersions(target), [...allVersions(), 9001]);
  });
});

describe("concurrent starters (PostgreSQL)", () => {
  test("two migrate() calls on two pools into a fresh schema: both succeed, each migration applied once", async (t: NodeTestContext) => {
    if (!PG_URL) {
      t.skip("PGlite has one process and one connection: nothing can start concurrently");
      return;
    }
    // A few rounds: each is a fresh race between two processes' worth of connections.
    for (let round = 0; round < 3; round++) {
      const { schema } = await freshSchemaDb();
      const a = openPostgres(urlWithSearchPath(PG_URL, schema), 2);
      const b = openPostgres(urlWithSearchPath(PG_URL, schema), 2);
      opened.push(a, b);
      const [ranA, ranB] = await Promise.all([migrate(a), migrate(b)]);
      assert.deepEqual(
        [...ranA, ...ranB].sort((x, y) => x - y),
        allVersions(),
        `round ${round}: every version applied by exactly one of the two (a=${ranA.join(",")} b=${ranB.join(",")})`,
      );
      assert.deepEqual(await appliedVersions(a), allVersions());
      const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from ${schema}.users`);
      assert.equal(rows[0]!.n, 0);
    }
  });
});
