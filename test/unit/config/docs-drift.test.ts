// One declaration per setting (src/config/settings.ts): docs/configuration.md's table is generated
// from it, and every variable loadConfig reads is declared there, and nothing else is.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { loadConfig } from "../../../src/config/index.ts";
import { SETTINGS } from "../../../src/config/settings.ts";
import { CONFIG_DOC, renderConfigDoc } from "../../../scripts/write-config-docs.ts";

/** The names loadConfig reads from an environment, recorded through a Proxy that holds nothing. */
function namesRead(): Set<string> {
  const read = new Set<string>();
  const env = new Proxy<Record<string, string | undefined>>(
    {},
    {
      get(_target, key) {
        if (typeof key === "string") read.add(key);
        return undefined;
      },
      has(_target, key) {
        if (typeof key === "string") read.add(key);
        return false;
      },
    },
  );
  loadConfig(env, { hostname: () => "mx1.example.com" });
  return read;
}

test("docs/configuration.md is what `npm run docs:config` writes from src/config/settings.ts", () => {
  const page = readFileSync(CONFIG_DOC, "utf8");
  assert.equal(page, renderConfigDoc(page), "docs/configuration.md drifted: run `npm run docs:config`");
});

test("every variable loadConfig reads is in the table, and the table holds no variable it does not read", () => {
  const read = [...namesRead()].sort();
  const declared = Object.keys(SETTINGS).sort();
  assert.deepEqual(
    read.filter((name) => !declared.includes(name)),
    [],
    "read by loadConfig, missing from src/config/settings.ts",
  );
  assert.deepEqual(
    declared.filter((name) => !read.includes(name)),
    [],
    "declared in src/config/settings.ts, never read by loadConfig",
  );
});

test("each declaration is complete: a description, and bounds that hold the default", () => {
  for (const [name, s] of Object.entries(SETTINGS)) {
    assert.ok(s.description.trim() !== "", `${name}: no description`);
    assert.ok(!s.description.includes("\n"), `${name}: the description must be one line`);
    if (s.kind === "int" && typeof s.default === "number") {
      const { min, max } = s as { min?: number; max?: number };
      if (min !== undefined) assert.ok(s.default >= min, `${name}: default below min`);
      if (max !== undefined) assert.ok(s.default <= max, `${name}: default above max`);
    }
  }
});
