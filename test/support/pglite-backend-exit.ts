// Run as a child process by test/integration/faults/embedded-engine-death.test.ts: kills the
// embedded engine's backend for real and prints what each later call did, as one JSON line. A
// child, because if the guard in src/db/pglite.ts regressed, this process would spin at 100 %
// CPU for good and only a SIGKILL from outside could end it.
import { isDatabaseUnavailable } from "../../src/db/client.ts";
import { openPglite } from "../../src/db/pglite.ts";

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => ({ resolved: true }),
    (e: unknown) => ({ error: (e as Error).name, unavailable: isDatabaseUnavailable(e) }),
  );

const db = await openPglite(null);
await db.exec("create table sink (x int)");
// The backend reads COPY data from the client; PGlite's exec() sends none, so PostgreSQL ends the
// backend with exit(1) ("unexpected EOF on client connection"): the ExitStatus case of
// electric-sql/pglite#1058, which otherwise spins in the protocol loop.
const copy = await outcome(db.exec("copy sink from stdin"));
const query = await outcome(db.query("select 1"));
const transaction = await outcome(db.transaction((tx) => tx.query("select 1")));
const closed = await outcome(db.close());
console.log(JSON.stringify({ copy, query, transaction, closed, exitCode: process.exitCode ?? 0 }));
