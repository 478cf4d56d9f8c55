// The engine (verify/) may not import config/, so its library defaults (verify/options.ts) are
// written beside the settings table rather than read from it. This test holds the two equal: an
// engine built from an empty environment's configuration (app/engine-options.ts) gets exactly the
// engine's own defaults, apart from the two the server derives from the machine's name.
import assert from "node:assert/strict";
import { test } from "node:test";
import { engineOptionsFrom } from "../../../src/app/engine-options.ts";
import { loadConfig } from "../../../src/config/index.ts";
import { defaultEngineOptions } from "../../../src/verify/index.ts";

/** Derived by the server from its host name (config/smtp-identity.ts); placeholders in the library. */
const DERIVED = new Set(["smtpHeloName", "smtpMailFrom"]);

test("every engine default equals the settings table's default for the same option", () => {
  const config = loadConfig({}, { hostname: () => "mx1.example.com" });
  const fromConfig = engineOptionsFrom(config.verify) as unknown as Record<string, unknown>;
  const own = defaultEngineOptions as unknown as Record<string, unknown>;
  const differing = Object.keys(own).filter(
    (k) => !DERIVED.has(k) && JSON.stringify(fromConfig[k]) !== JSON.stringify(own[k]),
  );
  assert.deepEqual(differing, [], "engine defaults that disagree with src/config/settings.ts");
  for (const k of DERIVED) assert.notEqual(fromConfig[k], own[k], `${k} is derived by the server`);
});
