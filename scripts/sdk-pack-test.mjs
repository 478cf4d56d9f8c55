// The SDK as an integrator gets it: builds sdk/, packs it with `npm pack`, installs the tarball in
// a fresh project outside the repository with no network (openapi-fetch and its dependency are
// packed from this checkout's node_modules and installed beside it, into an empty npm cache, with
// --offline), then:
//   - checks the tarball: LICENSE (the repository's, byte for byte), README without
//     repository-relative links, every path package.json names present, no source map or
//     sourceMappingURL pointing at a file the package does not ship;
//   - runs a CommonJS script that require()s both entry points and an ES-module script that
//     imports them: each resolves its own build (dist/cjs, dist/esm), makes calls through a
//     client (openapi-fetch underneath, a fetch that answers in-process), reads a 408's partial
//     result from MailprobeError, and verifies a webhook it signs itself per Standard Webhooks;
//   - type-checks a consumer file with this repository's TypeScript under moduleResolution
//     nodenext (a CommonJS .ts and an ES-module .mts), bundler, and node10 (`node`, which reads
//     typesVersions);
//   - compiles every ```ts example of docs/api.md and sdk/README.md (extracted by
//     scripts/doc-examples.mjs) under module/moduleResolution node16 and nodenext (each as a
//     CommonJS .ts and an ES-module .mts) and bundler, strict.
// Exits non-zero on the first failure; every step has a time limit, and the temporary directory
// goes whatever happens (SDK_PACK_TEST_KEEP=1 keeps it for a look). Usage: npm run test:sdk-pack
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { exampleModules } from "./doc-examples.mjs";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const sdk = join(repo, "sdk");
const TOTAL_BUDGET_MS = 240_000;
const deadline = Date.now() + TOTAL_BUDGET_MS;
const started = Date.now();

const tmp = mkdtempSync(join(tmpdir(), "mailprobe-sdk-pack-"));
const cleanUp = () => {
  if (process.env.SDK_PACK_TEST_KEEP === "1") console.log(`kept ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
};
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    cleanUp();
    process.exit(1);
  });
}

async function main() {
  // Outside the repository, so nothing resolves through the checkout's node_modules.
  assert.ok(relative(repo, tmp).startsWith(".."), `the temporary directory ${tmp} is inside the repository`);
  const tarballs = join(tmp, "tarballs");
  const app = join(tmp, "consumer");
  mkdirSync(tarballs);
  mkdirSync(app);

  step("build", () => npm(["run", "build:sdk"], { cwd: repo }));
  const packed = step("pack", () => {
    // The build step just ran; --ignore-scripts skips prepack's second one (the same script).
    const out = npm(["pack", "--json", "--ignore-scripts", "--pack-destination", tarballs], { cwd: sdk });
    return JSON.parse(out)[0];
  });
  const dependencies = step("pack dependencies", () => packDependencies(tarballs));

  step("install offline", () => {
    writeFileSync(
      join(app, "package.json"),
      `${JSON.stringify({ name: "sdk-consumer", private: true }, null, 2)}\n`,
    );
    writeFileSync(join(tmp, "npmrc"), "");
    npm(
      [
        "install",
        "--offline",
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
        "--cache",
        join(tmp, "npm-cache"),
        "--userconfig",
        join(tmp, "npmrc"),
        join(tarballs, packed.filename),
        ...dependencies,
      ],
      { cwd: app },
    );
  });

  const installed = join(app, "node_modules", "@mailprobe", "client");
  step("tarball contents", () => checkContents(packed, installed));

  writeFileSync(join(app, "check.cjs"), CJS_CHECK);
  writeFileSync(join(app, "check.mjs"), ESM_CHECK);
  step("require() from CommonJS", () =>
    console.log(run(process.execPath, ["check.cjs"], { cwd: app }).trim()),
  );
  step("import from an ES module", () =>
    console.log(run(process.execPath, ["check.mjs"], { cwd: app }).trim()),
  );

  writeFileSync(join(app, "consumer.ts"), TYPES_CHECK);
  writeFileSync(join(app, "consumer.mts"), TYPES_CHECK);
  writeFileSync(
    join(app, "tsconfig.nodenext.json"),
    tsconfig({ module: "nodenext", moduleResolution: "nodenext" }, ["consumer.ts", "consumer.mts"]),
  );
  writeFileSync(
    join(app, "tsconfig.bundler.json"),
    tsconfig({ module: "esnext", moduleResolution: "bundler" }, ["consumer.ts"]),
  );
  // TypeScript 6 deprecates node10 resolution; projects still on it set ignoreDeprecations, as here.
  writeFileSync(
    join(app, "tsconfig.node10.json"),
    tsconfig({ module: "commonjs", moduleResolution: "node10", ignoreDeprecations: "6.0" }, ["consumer.ts"]),
  );
  const tsc = createRequire(join(repo, "package.json")).resolve("typescript/bin/tsc");
  step("types, moduleResolution nodenext", () =>
    run(process.execPath, [tsc, "-p", "tsconfig.nodenext.json"], { cwd: app }),
  );
  step("types, moduleResolution bundler", () =>
    run(process.execPath, [tsc, "-p", "tsconfig.bundler.json"], { cwd: app }),
  );
  step("types, moduleResolution node10", () =>
    run(process.execPath, [tsc, "-p", "tsconfig.node10.json"], { cwd: app }),
  );

  const examples = step("documentation examples: extract", () => writeExamples(app));
  for (const resolution of ["node16", "nodenext", "bundler"]) {
    step(`documentation examples (${examples.toString()}), module/moduleResolution ${resolution}`, () =>
      run(process.execPath, [tsc, "-p", `tsconfig.examples-${resolution}.json`], { cwd: app }),
    );
  }
}

/**
 * The documentation's examples in examples/, each twice (.ts, CommonJS in this package, and .mts),
 * with a tsconfig per resolution; the packages they import besides the SDK (fastify, express's
 * types, Node's types) linked from this checkout. Returns how many examples there are.
 */
function writeExamples(app) {
  const modules = exampleModules(repo);
  assert.ok(modules.length > 0, "no ```ts block in the documentation");
  const dir = join(app, "examples");
  mkdirSync(dir);
  for (const m of modules) {
    writeFileSync(join(dir, `${m.name}.ts`), m.text);
    writeFileSync(join(dir, `${m.name}.mts`), m.text);
  }
  mkdirSync(join(app, "node_modules", "@types"), { recursive: true });
  for (const name of ["fastify", "@types/node", "@types/express"]) {
    symlinkSync(findPackageDir(name, repo), join(app, "node_modules", name), "dir");
  }
  const options = (module, moduleResolution) => ({
    module,
    moduleResolution,
    target: "ES2022",
    lib: ["ES2022", "DOM"],
    types: ["node"],
    strict: true,
    noEmit: true,
    // The SDK's own declarations are checked by the steps above; here only the examples are.
    skipLibCheck: true,
  });
  const config = (compilerOptions, include) => `${JSON.stringify({ compilerOptions, include }, null, 2)}\n`;
  writeFileSync(
    join(app, "tsconfig.examples-node16.json"),
    config(options("node16", "node16"), ["examples"]),
  );
  writeFileSync(
    join(app, "tsconfig.examples-nodenext.json"),
    config(options("nodenext", "nodenext"), ["examples"]),
  );
  writeFileSync(
    join(app, "tsconfig.examples-bundler.json"),
    config(options("esnext", "bundler"), ["examples/*.ts"]),
  );
  return modules.length;
}

/** openapi-fetch and whatever it depends on, packed from this checkout's node_modules. */
function packDependencies(destination) {
  const dirs = new Map();
  const visit = (name, from) => {
    const dir = findPackageDir(name, from);
    if (dirs.has(dir)) return;
    dirs.set(dir, name);
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(dependency, dir);
  };
  const sdkManifest = JSON.parse(readFileSync(join(sdk, "package.json"), "utf8"));
  for (const name of Object.keys(sdkManifest.dependencies ?? {})) visit(name, sdk);
  // An absolute path: npm would read "node_modules/x" as a GitHub "owner/repo".
  const out = npm(["pack", "--json", "--ignore-scripts", "--pack-destination", destination, ...dirs.keys()], {
    cwd: repo,
  });
  return JSON.parse(out).map((entry) => join(destination, entry.filename));
}

/** Node's lookup: node_modules/<name> in `from` and each directory above it. */
function findPackageDir(name, from) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    if (dirname(dir) === dir) throw new Error(`${name} is not installed (needed by ${from})`);
  }
}

function checkContents(packed, installed) {
  const files = packed.files.map((f) => f.path).sort();
  const outside = files.filter(
    (f) => !f.startsWith("dist/") && !["LICENSE", "README.md", "package.json"].includes(f),
  );
  assert.deepEqual(outside, [], "the tarball holds files besides dist/, LICENSE, README.md and package.json");
  assert.ok(files.includes("LICENSE"), "the tarball has no LICENSE");
  assert.equal(
    readFileSync(join(installed, "LICENSE"), "utf8"),
    readFileSync(join(repo, "LICENSE"), "utf8"),
    "sdk/LICENSE differs from the repository's LICENSE: copy it again",
  );

  const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
  const named = [
    manifest.main,
    manifest.module,
    manifest.types,
    ...leaves(manifest.exports),
    ...leaves(manifest.typesVersions),
  ];
  for (const target of named.filter((t) => typeof t === "string" && !t.includes("*"))) {
    assert.ok(
      files.includes(relative(".", target).split(sep).join("/")),
      `package.json names ${target}, which is not in the tarball`,
    );
  }

  for (const file of files) {
    const path = join(installed, file);
    if (file.endsWith(".map")) {
      const map = JSON.parse(readFileSync(path, "utf8"));
      for (const source of map.sources ?? []) {
        const target = resolve(dirname(path), map.sourceRoot ?? "", source);
        assert.ok(existsSync(target), `${file} points at ${source}, which the package does not ship`);
      }
    } else if (/\.(c|m)?(js|ts)$/.test(file)) {
      const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(path, "utf8"))?.[1];
      if (url && !url.startsWith("data:")) {
        assert.ok(
          existsSync(resolve(dirname(path), url)),
          `${file} names the map ${url}, which the package does not ship`,
        );
      }
    }
  }

  // The README is shown on the package's page, where ../docs/x.md leads nowhere.
  const readme = readFileSync(join(installed, "README.md"), "utf8");
  const relativeLinks = [...readme.matchAll(/\]\(([^)\s]+)[^)]*\)|^\[[^\]]+\]:\s*(\S+)/gm)]
    .map((m) => m[1] ?? m[2])
    .filter((href) => !/^(https?:|mailto:|#)/.test(href));
  assert.deepEqual(relativeLinks, [], "README.md links to files of the repository");
  console.log(`  ${files.length.toString()} files, ${(packed.size / 1024).toFixed(1)} kB packed`);
}

function leaves(value) {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (value && typeof value === "object") return Object.values(value).flatMap(leaves);
  return [];
}

function tsconfig(options, files) {
  const compilerOptions = {
    ...options,
    target: "ES2022",
    lib: ["ES2022", "DOM"],
    types: [],
    strict: true,
    noEmit: true,
    // The package's declarations are checked too, not skipped.
    skipLibCheck: false,
  };
  return `${JSON.stringify({ compilerOptions, files }, null, 2)}\n`;
}

function step(name, fn) {
  const at = Date.now();
  const value = fn();
  console.log(`✓ ${name} (${((Date.now() - at) / 1000).toFixed(1)} s)`);
  return value;
}

/** Runs a command within what is left of the budget; its stdout, or an error with its output. */
function run(command, args, { cwd }) {
  const timeout = deadline - Date.now();
  if (timeout <= 0)
    throw new Error(`out of time (${TOTAL_BUDGET_MS.toString()} ms) before: ${args.join(" ")}`);
  const result = spawnSync(command, args, {
    cwd,
    encoding: "utf8",
    timeout,
    killSignal: "SIGKILL",
    maxBuffer: 64 << 20,
  });
  if (result.error) throw new CommandError(`${args.join(" ")}: ${result.error.message}`);
  if (result.status !== 0) {
    throw new CommandError(
      `${args.join(" ")} (in ${cwd}) exited with ${String(result.status ?? result.signal)}\n${result.stdout}${result.stderr}`,
    );
  }
  return result.stdout;
}

class CommandError extends Error {}

/** npm, as the `npm run` that started us (no PATH lookup), or the one on PATH. */
function npm(args, options) {
  const cli = process.env.npm_execpath;
  return cli?.endsWith(".js") ? run(process.execPath, [cli, ...args], options) : run("npm", args, options);
}

// The runtime checks, the same for both module systems; `sdk`, `webhooks`, `resolved` (where the
// package's two entry points resolved), `FORMAT` ("cjs" or "esm"), `assert`, `createHmac` and
// `randomBytes` are bound by the header of each file.
const CHECK_BODY = `
  const inApp = (path) => path.startsWith(process.cwd() + sep) && !path.includes(sep + "src" + sep);
  assert.ok(inApp(resolved.index) && resolved.index.endsWith(["dist", FORMAT, "index.js"].join(sep)), resolved.index);
  assert.ok(inApp(resolved.webhooks) && resolved.webhooks.endsWith(["dist", FORMAT, "webhooks.js"].join(sep)), resolved.webhooks);

  // A client over openapi-fetch, with a fetch that answers in-process.
  const seen = [];
  const client = sdk.createMailprobeClient({
    baseUrl: "http://mailprobe.invalid",
    apiKey: "mpk_pack_test",
    fetch: async (input, init) => {
      const request = new Request(input, init);
      seen.push([request.method, request.url, request.headers.get("x-api-key")]);
      if (request.url.endsWith("/api/v1/credits/balance")) return Response.json({ balance: 42 });
      return Response.json(
        {
          error: { code: "VERIFICATION_TIMEOUT", message: "The verification ran out of time" },
          result: { email: await request.json().then((b) => b.email), status: "unknown", unknown_reason: "smtp_timeout" },
        },
        { status: 408, headers: { "x-request-id": "req-pack-test" } },
      );
    },
  });
  assert.deepEqual(await sdk.unwrap(client.GET("/api/v1/credits/balance")), { balance: 42 });
  const failure = await sdk.unwrap(client.POST("/api/v1/verify", { body: { email: "jane@example.com" } })).then(
    () => assert.fail("a 408 resolved"),
    (error) => error,
  );
  assert.ok(failure instanceof sdk.MailprobeError, String(failure));
  assert.ok(sdk.isMailprobeError(failure, "VERIFICATION_TIMEOUT"));
  assert.equal(failure.status, 408);
  assert.equal(failure.requestId, "req-pack-test");
  assert.equal(failure.body.result.email, "jane@example.com");
  assert.deepEqual(seen, [
    ["GET", "http://mailprobe.invalid/api/v1/credits/balance", "mpk_pack_test"],
    ["POST", "http://mailprobe.invalid/api/v1/verify", "mpk_pack_test"],
  ]);

  // A delivery signed here per Standard Webhooks: HMAC-SHA256 of "{id}.{timestamp}.{body}" keyed
  // with the base64-decoded secret after "whsec_".
  const key = randomBytes(24);
  const secret = "whsec_" + key.toString("base64");
  const id = "msg_" + randomBytes(8).toString("hex");
  const timestamp = String(Math.floor(Date.now() / 1000));
  const payload = JSON.stringify({ type: "task.completed", timestamp: new Date().toISOString(), data: { task_id: "t1" } });
  const mac = createHmac("sha256", key).update(id + "." + timestamp + "." + payload).digest("base64");
  const headers = {
    [webhooks.WEBHOOK_ID_HEADER]: id,
    [webhooks.WEBHOOK_TIMESTAMP_HEADER]: timestamp,
    [webhooks.WEBHOOK_SIGNATURE_HEADER]: "v1,bm90IHRoaXMgb25l v1," + mac,
  };
  const verified = await webhooks.verifyWebhookSignature({ payload, headers, secret });
  assert.equal(verified.ok, true, JSON.stringify(verified));
  assert.equal(verified.id, id);
  assert.equal(verified.event.data.task_id, "t1");
  assert.deepEqual(await webhooks.verifyWebhookSignature({ payload: payload + " ", headers, secret }), {
    ok: false,
    reason: "signature_mismatch",
  });
  console.log(FORMAT + ": both entry points load, a client call and a webhook verification work");
`;

const CJS_CHECK = `"use strict";
const assert = require("node:assert/strict");
const { createHmac, randomBytes } = require("node:crypto");
const { sep } = require("node:path");
const sdk = require("@mailprobe/client");
const webhooks = require("@mailprobe/client/webhooks");
const FORMAT = "cjs";
const resolved = { index: require.resolve("@mailprobe/client"), webhooks: require.resolve("@mailprobe/client/webhooks") };
(async () => {
${CHECK_BODY}
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

const ESM_CHECK = `import assert from "node:assert/strict";
import { createHmac, randomBytes } from "node:crypto";
import { sep } from "node:path";
import { fileURLToPath } from "node:url";
import * as sdk from "@mailprobe/client";
import * as webhooks from "@mailprobe/client/webhooks";
const FORMAT = "esm";
const resolved = {
  index: fileURLToPath(import.meta.resolve("@mailprobe/client")),
  webhooks: fileURLToPath(import.meta.resolve("@mailprobe/client/webhooks")),
};
${CHECK_BODY}
`;

// Compiled, never run: the types an integrator's editor sees. Each @ts-expect-error must hold an
// error, so the checks cannot pass on types that degraded to any.
const TYPES_CHECK = `import {
  createMailprobeClient,
  isMailprobeError,
  MailprobeError,
  unwrap,
  type MailprobeErrorOf,
  type VerificationResult,
  type VerificationTimeoutBody,
} from "@mailprobe/client";
import { verifyWebhookSignature, type WebhookVerification } from "@mailprobe/client/webhooks";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

export const timeoutBodyIsTyped: Equal<MailprobeErrorOf<"VERIFICATION_TIMEOUT">["body"], VerificationTimeoutBody> = true;
export const partialResultIsTyped: Equal<VerificationTimeoutBody["result"], VerificationResult> = true;

export async function verifyOne(email: string): Promise<VerificationResult> {
  const client = createMailprobeClient({ baseUrl: "https://verify.example.com", apiKey: "mpk_x" });
  // @ts-expect-error: no such path in the API
  void client.GET("/api/v1/no-such-path");
  try {
    return await unwrap(client.POST("/api/v1/verify", { body: { email } }));
  } catch (error) {
    if (isMailprobeError(error, "VERIFICATION_TIMEOUT")) return error.body.result;
    if (error instanceof MailprobeError) {
      const status: number = error.status;
      // @ts-expect-error: the body is unknown until the code is known
      void error.body.result;
      void status;
    }
    throw error;
  }
}

export async function receive(payload: string, headers: Headers, secret: string): Promise<string> {
  const outcome: WebhookVerification = await verifyWebhookSignature({ payload, headers, secret });
  return outcome.ok ? outcome.event.type : outcome.reason;
}
`;

// Last, so that the templates above are initialised when main() reads them.
try {
  await main();
  console.log(`sdk-pack-test: ok in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (error) {
  console.error(
    // A failed command's output says it all; our own script's stack would only add noise.
    `sdk-pack-test: FAILED: ${error instanceof CommandError ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
  );
  process.exitCode = 1;
} finally {
  cleanUp();
}
