// Creates a migrated PGlite data directory dump that every test file loads instead of paying
// for initdb (~3 s, 700 MB) and migrations itself.
import { writeFile } from "node:fs/promises";
import { migrate } from "../src/db/migrate.ts";
import { openPglite } from "../src/db/pglite.ts";

const out = process.argv[2];
if (!out) throw new Error("usage: make-pglite-template.ts OUTPUT_FILE");
const db = await openPglite(null);
await migrate(db);
const dump = await db.raw.dumpDataDir("none");
await writeFile(out, Buffer.from(await dump.arrayBuffer()));
await db.close();
