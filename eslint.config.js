// ESLint flat config: type-checked rules that catch the bugs that hurt services
// (floating promises, non-exhaustive switches) plus DESIGN.md §4 dependency direction.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const layer = (from, forbidden, message) => ({
  files: [`src/${from}/**/*.ts`],
  rules: {
    "no-restricted-imports": [
      "error",
      { patterns: forbidden.map((f) => ({ group: [`**/${f}/**`, `**/${f}/*`], message })) },
    ],
  },
});

export default tseslint.config(
  { ignores: ["node_modules", "dist", "data", ".tmp", "bin", "scripts/*.mjs", "eslint.config.js", "web"] },
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
  layer(
    "verify",
    [
      "http",
      "db",
      "config",
      "app",
      "credits",
      "tasks",
      "jobs",
      "keys",
      "webhooks",
      "verifications",
      "uploads",
      "files",
      "cli",
      "observability",
    ],
    "verify/ is a pure engine: it imports only lib/.",
  ),
  layer(
    "lib",
    [
      "http",
      "db",
      "config",
      "app",
      "verify",
      "credits",
      "tasks",
      "jobs",
      "keys",
      "webhooks",
      "verifications",
      "uploads",
      "files",
      "cli",
    ],
    "lib/ is dependency-free.",
  ),
  layer("credits", ["http", "app", "cli"], "Domain modules never import http/, app/ or cli/."),
  layer("keys", ["http", "app", "cli"], "Domain modules never import http/, app/ or cli/."),
  layer("verifications", ["http", "app", "cli"], "Domain modules never import http/, app/ or cli/."),
  layer("tasks", ["http", "app", "cli"], "Domain modules never import http/, app/ or cli/."),
  layer("uploads", ["http", "app", "cli"], "Domain modules never import http/, app/ or cli/."),
  layer("jobs", ["http", "app", "cli"], "Domain modules never import http/, app/ or cli/."),
  layer("webhooks", ["http", "app", "cli"], "Domain modules never import http/, app/ or cli/."),
  layer(
    "db",
    ["http", "app", "cli", "credits", "keys", "tasks", "verifications", "uploads", "jobs", "webhooks"],
    "db/ is below the domain.",
  ),
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
