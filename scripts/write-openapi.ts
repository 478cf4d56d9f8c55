// `npm run openapi`: writes the document GET /openapi.json serves to openapi.json at the
// repository root (the SDK in sdk/ is generated from it; test/integration/api/openapi.test.ts
// fails when the two differ). The app is built from a fixed configuration on a database that
// refuses every query (building the document runs none), so the output depends on the code only:
// no environment, port, data directory or database goes into it.
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { format, resolveConfig } from "prettier";
import { buildApp } from "../src/app/build-app.ts";
import { buildServices } from "../src/app/services.ts";
import { loadConfig } from "../src/config/index.ts";
import type { Database } from "../src/db/client.ts";
import { createLogger } from "../src/observability/logger.ts";

const OUTPUT = fileURLToPath(new URL("../openapi.json", import.meta.url));

const noDatabase = (): never => {
  throw new Error("write-openapi: the document must not need the database");
};

const offlineDb: Database = {
  kind: "pglite",
  query: noDatabase,
  transaction: noDatabase,
  exec: noDatabase,
  subscribe: noDatabase,
  close: async () => {},
};

/** The served document, built by the real app from a fixed configuration. */
export async function buildOpenapiDocument(): Promise<unknown> {
  const config = loadConfig({ LOG_LEVEL: "silent", DATA_DIR: "/nonexistent-write-openapi" });
  const services = buildServices({
    config,
    db: offlineDb,
    logger: createLogger("silent"),
    encryptionKey: Buffer.alloc(32),
    jwtSecret: null,
    processMetrics: false,
  });
  const app = await buildApp(services);
  try {
    const res = await app.inject({ method: "GET", url: "/openapi.json" });
    if (res.statusCode !== 200) throw new Error(`GET /openapi.json answered ${res.statusCode.toString()}`);
    return res.json();
  } finally {
    await app.close();
    await services.close();
  }
}

/**
 * The file's text: the document's own key order (paths and schemas sorted by name in
 * http/schemas/openapi.ts), 2-space JSON as Prettier writes it (the repository's `prettier
 * --check .` covers this file too), with a trailing newline.
 */
export async function renderOpenapi(doc: unknown): Promise<string> {
  const options = (await resolveConfig(OUTPUT)) ?? {};
  return format(JSON.stringify(doc, null, 2), { ...options, parser: "json", filepath: OUTPUT });
}

// `--out <file>` writes elsewhere (CI's client generators and lint read a fresh copy without
// touching the committed one).
async function main(): Promise<void> {
  const at = process.argv.indexOf("--out");
  const output = at > 0 && process.argv[at + 1] ? process.argv[at + 1]! : OUTPUT;
  const text = await renderOpenapi(await buildOpenapiDocument());
  await writeFile(output, text);
  console.log(`wrote ${output} (${Buffer.byteLength(text).toString()} bytes)`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
