// `npm run test:clients`: the OpenAPI document must turn into a working client with a second,
// independent generator. Writes the current document, generates a @hey-api/openapi-ts fetch
// client from it into test/generated-client/client/ (gitignored, removed afterwards unless
// --keep), type-checks that client together with test/generated-client/integrator.ts under the
// repository's strict compiler options and lints the integrator, then runs the integrator as a
// separate process against the real app (real test database, worker pool and webhook dispatcher)
// listening on loopback, with the mail-world simulator as the Internet. The integrator uses only
// the generated client, as a customer would.
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@hey-api/openapi-ts";
import { createWorkerRole, type WorkerRole } from "../src/app/worker-role.ts";
import { worldEnv } from "../test/support/batch.ts";
import { startMailWorld, type MailWorld } from "../test/support/mail-world/index.ts";
import { createTestContext, type TestContext } from "../test/support/test-app.ts";
import { buildOpenapiDocument } from "./write-openapi.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const HERE = join(ROOT, "test/generated-client");
const GENERATED = join(HERE, "client");
/** The whole check takes ~25 s on 2 cores (a fresh PGlite is most of it); a hang fails it. */
const DEADLINE_MS = 90_000;
const INTEGRATOR_TIMEOUT_MS = 45_000;
const STARTING_CREDITS = 50;
const keep = process.argv.includes("--keep");

/** The world the integrator talks to, and each address's ground truth from the simulator. */
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

function step(name: string): () => void {
  const started = performance.now();
  process.stdout.write(`test:clients: ${name} …\n`);
  return () =>
    process.stdout.write(`test:clients: ${name} ok (${Math.round(performance.now() - started)} ms)\n`);
}

/** Runs a command to completion with inherited output; rejects on a non-zero exit or the timeout. */
function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: "inherit" });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${[command, ...args].join(" ")} exited with ${signal ?? String(code)}`));
    });
  });
}

async function generateClient(scratch: string): Promise<void> {
  const done = step("write the OpenAPI document and generate the client");
  const input = join(scratch, "openapi.json");
  await writeFile(input, JSON.stringify(await buildOpenapiDocument(), null, 2));
  await rm(GENERATED, { recursive: true, force: true });
  await createClient({
    input,
    output: GENERATED,
    plugins: ["@hey-api/client-fetch"],
    logs: { file: false, level: "silent" },
  });
  done();
}

async function typeCheck(): Promise<void> {
  const checked = step("type-check the generated client and the integrator (tsc, strict)");
  const tsc = join(ROOT, "node_modules/typescript/bin/tsc");
  await run(process.execPath, [tsc, "--noEmit", "-p", join(HERE, "tsconfig.json")], process.env, 60_000);
  checked();
  // `npm run lint` skips this folder (its import exists only once the client is generated).
  const linted = step("lint the integrator (eslint)");
  const eslint = join(ROOT, "node_modules/eslint/bin/eslint.js");
  await run(process.execPath, [eslint, "--no-ignore", join(HERE, "integrator.ts")], process.env, 60_000);
  linted();
}

interface Server {
  baseUrl: string;
  apiKey: string;
  expect: Record<string, string>;
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
        // The integrator's webhook receiver listens on 127.0.0.1, which the SSRF guard refuses by default.
        WEBHOOK_ALLOW_PRIVATE: "true",
      }),
    });
    await ctx.app.listen({ port: 0, host: "127.0.0.1" });
    worker = createWorkerRole(ctx.services);
    worker.start();
    const user = await ctx.createUser(STARTING_CREDITS);
    const all = [ADDRESSES.verify, ADDRESSES.verifyWithNewKey, ...ADDRESSES.task, ...ADDRESSES.upload];
    const expect = Object.fromEntries(all.map((a) => [a, world!.expectation(a).status]));
    done();
    return {
      baseUrl: `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port.toString()}`,
      apiKey: user.apiKey,
      expect,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const deadline = setTimeout(() => {
    console.error(`test:clients: over ${DEADLINE_MS.toString()} ms, giving up`);
    process.exit(1);
  }, DEADLINE_MS);
  deadline.unref();
  const scratch = await mkdtemp(join(tmpdir(), "mailprobe-clients-"));
  try {
    await generateClient(scratch);
    await typeCheck();
    const server = await startServer();
    try {
      const done = step("run the integrator (generated client only)");
      await run(
        process.execPath,
        ["--import", "tsx", join(HERE, "integrator.ts")],
        {
          ...process.env,
          MAILPROBE_URL: server.baseUrl,
          MAILPROBE_KEY: server.apiKey,
          INTEGRATOR_PLAN: JSON.stringify({
            startingCredits: STARTING_CREDITS,
            verify: ADDRESSES.verify,
            verifyWithNewKey: ADDRESSES.verifyWithNewKey,
            task: ADDRESSES.task,
            upload: ADDRESSES.upload,
            expect: server.expect,
          }),
        },
        INTEGRATOR_TIMEOUT_MS,
      );
      done();
    } finally {
      await server.close();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
    if (!keep) await rm(GENERATED, { recursive: true, force: true });
    clearTimeout(deadline);
  }
  console.log(`test:clients: passed in ${(performance.now() - started).toFixed(0)} ms`);
}

await main();
