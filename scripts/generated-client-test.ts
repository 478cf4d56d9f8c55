// `npm run test:clients`: the OpenAPI document must turn into working clients with generators we
// do not maintain (GENERATORS below: @hey-api/openapi-ts, orval, openapi-zod-client). Writes the
// current document, generates each client from it into test/generated-client/<client>/
// (gitignored, removed afterwards unless --keep), type-checks every client together with its
// integrator under the repository's strict compiler options and lints the integrators, while one
// real app (real test database, worker pool and webhook dispatcher) starts on loopback with the
// mail-world simulator as the Internet. Then every integrator runs at once, each a separate
// process with its own users, using only its generated client as a customer would; last, the
// xlsx each one saved is opened with our own list reader.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@hey-api/openapi-ts";
import { generateZodClientFromOpenAPI } from "openapi-zod-client";
import { generate as generateOrval } from "orval";
import { createWorkerRole, type WorkerRole } from "../src/app/worker-role.ts";
import { parseListFile } from "../src/files/index.ts";
import { worldEnv } from "../test/support/batch.ts";
import { startMailWorld, type MailWorld } from "../test/support/mail-world/index.ts";
import { createTestContext, type TestContext } from "../test/support/test-app.ts";
import { buildOpenapiDocument } from "./write-openapi.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const HERE = join(ROOT, "test/generated-client");
/** The whole check takes ~35 s on 2 cores (a fresh PGlite, tsc and eslint are most of it); a hang fails it. */
const DEADLINE_MS = 180_000;
const INTEGRATOR_TIMEOUT_MS = 60_000;
const STARTING_CREDITS = 50;
/** The server's real limits (the test context lifts them), so that a storm of requests meets a 429. */
const RATE_LIMIT = { RATE_LIMIT_PER_SECOND: "20", RATE_LIMIT_BURST: "40" };
const keep = process.argv.includes("--keep");

/** A client generator, the folder it writes into (gitignored) and the integrator that uses it. */
interface Generator {
  /** The npm package; its installed version is printed with the results. */
  package: string;
  client: string;
  integrator: string;
  generate(input: string, output: string): Promise<void>;
}

const GENERATORS: readonly Generator[] = [
  {
    // The fetch client: one function per operation answering { data, error, response }.
    package: "@hey-api/openapi-ts",
    client: "client",
    integrator: "integrator.ts",
    generate: async (input, output) => {
      await createClient({
        input,
        output,
        plugins: ["@hey-api/client-fetch"],
        logs: { file: false, level: "silent" },
      });
    },
  },
  {
    // The fetch client, { status, data, headers } per call. A runtime fetch per call carries the
    // base URL and the key; the download throws on an error status (integrator-orval.ts says why).
    package: "orval",
    client: "client-orval",
    integrator: "integrator-orval.ts",
    generate: (input, output) =>
      generateOrval(
        {
          input: { target: input },
          output: {
            target: join(output, "client.ts"),
            client: "fetch",
            mode: "single",
            override: {
              fetch: { useRuntimeFetcher: true },
              operations: {
                downloadTaskResults: { fetch: { useRuntimeFetcher: true, forceSuccessResponse: true } },
              },
            },
          },
        },
        undefined,
        { logLevel: "error" },
      ),
  },
  {
    // A zodios client (axios underneath) whose zod schemas validate every JSON response. By
    // default only application/json bodies get a schema, so the download would be typed void;
    // allowing application/octet-stream, the download's first media type, makes it a File.
    package: "openapi-zod-client",
    client: "client-zodios",
    integrator: "integrator-zodios.ts",
    generate: async (input, output) => {
      await mkdir(output, { recursive: true });
      await generateZodClientFromOpenAPI({
        openApiDoc: JSON.parse(await readFile(input, "utf8")) as Parameters<
          typeof generateZodClientFromOpenAPI
        >[0]["openApiDoc"],
        distPath: join(output, "client.ts"),
        prettierConfig: null,
        options: {
          withAlias: true,
          isMediaTypeAllowed: (type) => type === "application/json" || type === "application/octet-stream",
        },
      });
    },
  },
];

/** The world the integrators talk to, and each address's ground truth from the simulator. */
const WORLD = {
  domains: [
    {
      name: "acme.test",
      hosts: [{ name: "mx1.acme.test", kind: "postfix" as const }],
      mailboxes: ["alice", "bob", "carol", "dave", "erin", "frank"],
    },
    { name: "catch.test", hosts: [{ name: "mx.catch.test" }], catchAll: true },
  ],
};
const ADDRESSES = {
  /** Realtime verification with the user's first key. */
  verify: "carol@acme.test",
  /** Realtime verification with the key the integrator creates. */
  verifyWithNewKey: "dave@acme.test",
  /** The batch task. */
  task: ["alice@acme.test", "bob@acme.test", "nobody@acme.test", "anyone@catch.test"],
  /** The csv upload. */
  upload: ["erin@acme.test", "frank@acme.test", "ghost@acme.test"],
};

function versionOf(name: string): string {
  return (
    JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }
  ).version;
}

function step(name: string): () => void {
  const started = performance.now();
  process.stdout.write(`test:clients: ${name} …\n`);
  return () =>
    process.stdout.write(`test:clients: ${name} ok (${Math.round(performance.now() - started)} ms)\n`);
}

/**
 * Runs a command to completion, each line of its output prefixed with `label`; rejects on a
 * non-zero exit or the timeout.
 */
function run(
  label: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    for (const [from, to] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ] as const) {
      let rest = "";
      from.setEncoding("utf8");
      from.on("data", (chunk: string) => {
        const lines = (rest + chunk).split("\n");
        rest = lines.pop()!;
        for (const line of lines) to.write(`${label} ${line}\n`);
      });
      from.on("end", () => rest && to.write(`${label} ${rest}\n`));
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else
        reject(new Error(`${label} ${[command, ...args].join(" ")} exited with ${signal ?? String(code)}`));
    });
  });
}

async function generateClients(scratch: string): Promise<void> {
  const done = step("write the OpenAPI document and generate the clients");
  const input = join(scratch, "openapi.json");
  await writeFile(input, JSON.stringify(await buildOpenapiDocument(), null, 2));
  for (const g of GENERATORS) {
    const output = join(HERE, g.client);
    await rm(output, { recursive: true, force: true });
    await g.generate(input, output);
  }
  done();
}

/** tsc and eslint at once: both are child processes, and the server's start overlaps them too. */
async function typeCheck(): Promise<void> {
  const tsc = join(ROOT, "node_modules/typescript/bin/tsc");
  // `npm run lint` skips this folder (its imports exist only once the clients are generated).
  const eslint = join(ROOT, "node_modules/eslint/bin/eslint.js");
  const files = ["shared.ts", ...GENERATORS.map((g) => g.integrator)].map((f) => join(HERE, f));
  const checked = step(
    "type-check the generated clients and the integrators (tsc, strict) and lint the integrators (eslint)",
  );
  await Promise.all([
    run(
      "[tsc]",
      process.execPath,
      [tsc, "--noEmit", "-p", join(HERE, "tsconfig.json")],
      process.env,
      120_000,
    ),
    run("[eslint]", process.execPath, [eslint, "--no-ignore", ...files], process.env, 120_000),
  ]);
  checked();
}

interface Server {
  baseUrl: string;
  expect: Record<string, string>;
  rateLimitBurst: number;
  /** Three users per integrator: its own (STARTING_CREDITS), one with 1 credit, one to rate-limit. */
  keysFor(): Promise<{ own: string; poor: string; storm: string }>;
  close(): Promise<void>;
}

async function startServer(): Promise<Server> {
  const done = step("start mailprobe on loopback with the mail-world simulator");
  let world: MailWorld | undefined;
  let ctx: TestContext | undefined;
  let worker: WorkerRole | undefined;
  const close = async () => {
    await worker?.stop(5_000);
    await ctx?.close();
    await world?.close();
  };
  try {
    world = await startMailWorld(WORLD);
    ctx = await createTestContext({
      env: worldEnv(world, {
        ...RATE_LIMIT,
        // The integrator's webhook receiver listens on 127.0.0.1, which the SSRF guard refuses by default.
        WEBHOOK_ALLOW_PRIVATE: "true",
      }),
    });
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    worker = createWorkerRole(ctx.services);
    worker.start();
    const all = [ADDRESSES.verify, ADDRESSES.verifyWithNewKey, ...ADDRESSES.task, ...ADDRESSES.upload];
    const expect = Object.fromEntries(all.map((a) => [a, world!.expectation(a).status]));
    const app = ctx;
    done();
    return {
      baseUrl: `http://127.0.0.1:${(app.app.server.address() as AddressInfo).port.toString()}`,
      expect,
      rateLimitBurst: app.config.rateLimitBurst,
      keysFor: async () => ({
        own: (await app.createUser(STARTING_CREDITS)).apiKey,
        poor: (await app.createUser(1)).apiKey,
        storm: (await app.createUser(0)).apiKey,
      }),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Runs one generator's integrator against the server; resolves to the path of the xlsx it saved. */
async function runIntegrator(g: Generator, server: Server, scratch: string): Promise<string> {
  const keys = await server.keysFor();
  const xlsxPath = join(scratch, `${g.client}.xlsx`);
  await run(
    `[${g.package}]`,
    process.execPath,
    ["--import", "tsx", join(HERE, g.integrator)],
    {
      ...process.env,
      MAILPROBE_URL: server.baseUrl,
      MAILPROBE_KEY: keys.own,
      INTEGRATOR_PLAN: JSON.stringify({
        generator: g.package,
        startingCredits: STARTING_CREDITS,
        ...ADDRESSES,
        expect: server.expect,
        poorKey: keys.poor,
        stormKey: keys.storm,
        rateLimitBurst: server.rateLimitBurst,
        xlsxPath,
      }),
    },
    INTEGRATOR_TIMEOUT_MS,
  );
  return xlsxPath;
}

/** A saved download opened as a workbook by our own list reader: the task's addresses, in its email column. */
async function checkSavedXlsx(g: Generator, path: string): Promise<void> {
  const parsed = await parseListFile({
    filename: "results.xlsx",
    data: await readFile(path),
    maxEmails: 1_000,
  });
  assert.ok(
    parsed.ok,
    `${g.package}: the saved xlsx does not open: ${parsed.ok ? "" : parsed.problem.message}`,
  );
  assert.deepEqual(
    [...parsed.list.emails].sort(),
    [...ADDRESSES.task].sort(),
    `${g.package}: the xlsx's addresses`,
  );
}

async function main(): Promise<void> {
  const started = performance.now();
  const deadline = setTimeout(() => {
    console.error(`test:clients: over ${DEADLINE_MS.toString()} ms, giving up`);
    process.exit(1);
  }, DEADLINE_MS);
  deadline.unref();
  for (const g of GENERATORS) console.log(`test:clients: ${g.package} ${versionOf(g.package)}`);
  const scratch = await mkdtemp(join(tmpdir(), "mailprobe-clients-"));
  try {
    await generateClients(scratch);
    // The server's start (mostly a fresh PGlite) overlaps the type-check and the lint.
    const [checked, serving] = await Promise.allSettled([typeCheck(), startServer()]);
    if (serving.status === "fulfilled" && checked.status === "rejected") await serving.value.close();
    if (checked.status === "rejected") throw checked.reason;
    if (serving.status === "rejected") throw serving.reason;
    const server = serving.value;
    try {
      const done = step("run the integrators at once (each with its generated client only)");
      // Settled, not all(): one integrator's failure must not close the server under the others.
      const outcomes = await Promise.allSettled(GENERATORS.map((g) => runIntegrator(g, server, scratch)));
      const failed = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as unknown] : []));
      if (failed.length > 0)
        throw new AggregateError(failed, `${failed.length.toString()} integrator(s) failed`);
      const saved = outcomes.map((o) => (o as PromiseFulfilledResult<string>).value);
      done();
      const opened = step("open each saved xlsx (src/files list reader)");
      for (const [i, g] of GENERATORS.entries()) await checkSavedXlsx(g, saved[i]!);
      opened();
    } finally {
      await server.close();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
    if (!keep) for (const g of GENERATORS) await rm(join(HERE, g.client), { recursive: true, force: true });
    clearTimeout(deadline);
  }
  console.log(`test:clients: passed in ${(performance.now() - started).toFixed(0)} ms`);
}

await main();
