// ESLint flat config: type-checked rules that catch the bugs that hurt services
// (floating promises, non-exhaustive switches) plus DESIGN.md §4 dependency direction.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { readdirSync } from "node:fs";

// DESIGN.md §4 as an allow-list: each folder under src/ may import only the folders named here
// (its own files are always fine); every other src/ folder is denied. A new dependency edge is
// therefore a one-line decision in this table, never an accident. Arrows point down; the
// domain rows are the imports in use when the table was written. Evidence:
// test/unit/lint/boundaries.test.ts.
const SRC_FOLDERS = readdirSync(new URL("./src/", import.meta.url), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const everythingBut = (...names) => SRC_FOLDERS.filter((f) => !names.includes(f));
const DOMAIN_BASE = ["lib", "db", "verify", "observability"];
const ALLOWED = {
  lib: [],
  verify: ["lib"],
  config: ["lib"],
  observability: ["lib", "config"],
  db: ["lib", "verify"],
  // A format library (rows in, bytes out): no storage.
  files: ["lib", "verify"],
  doctor: ["lib", "verify"],
  keys: [...DOMAIN_BASE],
  credits: [...DOMAIN_BASE],
  reports: [...DOMAIN_BASE],
  ratelimit: [...DOMAIN_BASE],
  auth: [...DOMAIN_BASE, "keys"],
  users: [...DOMAIN_BASE, "credits", "keys"],
  realtime: [...DOMAIN_BASE, "auth", "credits"],
  tasks: [...DOMAIN_BASE, "auth", "credits", "files", "jobs", "realtime", "webhooks"],
  uploads: [...DOMAIN_BASE, "auth", "files", "tasks"],
  // The outbound address guard: a pure function of an address, for webhooks and mail hosts.
  net: ["lib"],
  // The engine's cluster-wide limits at mail servers, kept in PostgreSQL: per-server-IP session
  // slots (smtp_host_slots) and providers' paces (provider_paces), for the worker pool and realtime.
  politeness: ["lib", "db", "verify"],
  // The queue: claims, leases, retry decisions; it hands results to tasks/ through a port.
  jobs: [...DOMAIN_BASE, "config", "politeness"],
  webhooks: [...DOMAIN_BASE, "config", "net"],
  // The domain through HttpDeps (http/deps.ts): never db/, config/, jobs/, app/ or cli/.
  http: [
    ...["lib", "observability", "verify", "auth", "credits", "files", "keys", "ratelimit"],
    ...["realtime", "reports", "tasks", "uploads", "users", "webhooks"],
  ],
  // The composition root builds everything; only cli/ (the process entry) imports it.
  app: everythingBut("app", "cli"),
  // The process entry (DESIGN's main.ts is cli/main.ts); it builds the HTTP app through app/.
  cli: everythingBut("cli", "http"),
};
{
  const problems = [
    ...SRC_FOLDERS.filter((f) => !(f in ALLOWED)).map((f) => `src/${f}/ has no row`),
    ...Object.entries(ALLOWED).flatMap(([f, allowed]) => [
      ...(SRC_FOLDERS.includes(f) ? [] : [`${f} is not a src/ folder`]),
      ...allowed.filter((to) => !SRC_FOLDERS.includes(to)).map((to) => `${f} allows unknown ${to}`),
    ]),
  ];
  // Arrows point down (DESIGN.md §4): no folder may reach itself through the rows, so a new edge
  // that closes a cycle fails here, before any file is linted.
  const cycleThrough = (start) => {
    const path = [start];
    const walk = (at) => {
      for (const to of ALLOWED[at] ?? []) {
        if (to === start) return [...path, to];
        if (path.includes(to)) continue;
        path.push(to);
        const found = walk(to);
        if (found) return found;
        path.pop();
      }
      return null;
    };
    return walk(start);
  };
  const cycles = Object.keys(ALLOWED).flatMap((f) => {
    const cycle = cycleThrough(f);
    return cycle ? [`cycle ${cycle.join(" → ")}`] : [];
  });
  problems.push(...cycles.slice(0, 1));
  if (problems.length > 0) throw new Error(`eslint.config.js layer allow-list: ${problems.join("; ")}`);
}

// Packages that belong to one layer (DESIGN.md §4): Fastify to http/ and app/, each database
// driver to its adapter.
const FASTIFY = { regex: "^(fastify|@fastify/[^/]+)(/|$)", allowedIn: ["http", "app"] };
const DRIVERS = {
  regex: "^(pg|@electric-sql/pglite)(/|$)",
  files: ["src/db/pglite.ts", "src/db/postgres.ts", "src/db/postgres-listen.ts"],
};

/** `no-restricted-imports` for one folder: every src/ folder not on its allow-list, plus packages. */
function layerRules(from, { allowDrivers = false } = {}) {
  const allowed = ALLOWED[from];
  const may = allowed.length > 0 ? allowed.map((f) => `${f}/`).join(", ") : "nothing outside itself";
  const patterns = SRC_FOLDERS.filter((to) => to !== from && !allowed.includes(to)).map((to) => ({
    // A relative path that climbs to src/ and enters `to` (no subfolder shares a top-level name).
    regex: `^(\\./)?(\\.\\./)+${to}(/|$)`,
    message: `${from}/ may import only ${may} (DESIGN.md §4, allow-list in eslint.config.js); not ${to}/.`,
  }));
  // verify/ is a library with one entry (DESIGN.md §4): the rest of src/ reaches it through
  // verify/index.ts only, so the engine's files can move and split without touching a caller.
  if (from !== "verify" && allowed.includes("verify"))
    patterns.push({
      regex: "^(\\./)?(\\.\\./)+verify/(?!index\\.ts$)",
      message: "Import verify/ only through verify/index.ts, the engine's public API (DESIGN.md §4).",
    });
  if (!FASTIFY.allowedIn.includes(from))
    patterns.push({ regex: FASTIFY.regex, message: "Only http/ and app/ import Fastify (DESIGN.md §4)." });
  if (!allowDrivers)
    patterns.push({
      regex: DRIVERS.regex,
      message: "Only db/pglite.ts and db/postgres*.ts import their drivers (DESIGN.md §4).",
    });
  return { "no-restricted-imports": ["error", { patterns }] };
}

const layers = [
  ...SRC_FOLDERS.map((from) => ({ files: [`src/${from}/**/*.ts`], rules: layerRules(from) })),
  { files: DRIVERS.files, rules: layerRules("db", { allowDrivers: true }) },
];

export default tseslint.config(
  {
    ignores: [
      "node_modules",
      "dist",
      "data",
      ".tmp",
      "bin",
      // Plain-JS bootstraps that load tsx before any TypeScript (like bin/).
      "src/files/parse/parse-worker.mjs",
      "scripts/*.mjs",
      "eslint.config.js",
      "web/dist",
      "sdk/dist",
      // Imports a client generated while `npm run test:clients` runs; that script lints it itself.
      "test/generated-client",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            { from: "package", package: "node:test", name: ["test", "describe", "it", "suite"] },
          ],
        },
      ],
      "@typescript-eslint/switch-exhaustiveness-check": [
        "error",
        { considerDefaultExhaustiveForUnions: true },
      ],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false } }],
    },
  },
  ...layers,
  {
    files: ["test/**/*.ts", "bench/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
);
