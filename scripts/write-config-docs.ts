// `npm run docs:config`: writes the settings table of docs/configuration.md from the one
// declaration of every environment variable, src/config/settings.ts. Only the lines between the
// two marker comments are generated; the prose above and below them is the page's own.
// test/unit/config/docs-drift.test.ts fails when the committed page differs from what this writes.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SETTINGS, type Setting } from "../src/config/settings.ts";

export const CONFIG_DOC = fileURLToPath(new URL("../docs/configuration.md", import.meta.url));

const START =
  "<!-- settings:start (generated from src/config/settings.ts by `npm run docs:config`; edit the table there) -->";
const END = "<!-- settings:end -->";

const code = (v: string | number | boolean): string => `\`${String(v)}\``;

function defaultCell(s: Setting): string {
  if (s.defaultText !== undefined) return s.defaultText;
  if (s.default === null) return "unset";
  if (Array.isArray(s.default)) return code(s.default.join(","));
  return code(s.default as string | number | boolean);
}

function boundsCell(s: Setting): string {
  if (s.values !== undefined) return s.values.map(code).join(" / ");
  if (s.protocols !== undefined) return s.protocols.map(code).join(" / ");
  if (s.minLength !== undefined) return `length ≥ ${String(s.minLength)}`;
  if (s.min !== undefined && s.max !== undefined) return `${String(s.min)}–${String(s.max)}`;
  if (s.min !== undefined) return `≥ ${String(s.min)}`;
  return "";
}

/** The generated table, markers included. */
function renderSettingsTable(): string {
  const rows = Object.entries(SETTINGS as Record<string, Setting>).map(([name, s]) =>
    [
      "",
      code(name),
      s.kind,
      s.unit === "none" ? "" : s.unit,
      defaultCell(s),
      boundsCell(s),
      s.description.replaceAll("|", "\\|"),
      "",
    ]
      .join(" | ")
      .trim(),
  );
  return [
    START,
    "",
    "| variable | kind | unit | default | bounds | meaning |",
    "|---|---|---|---|---|---|",
    ...rows,
    "",
    END,
  ].join("\n");
}

/** The page with its generated table replaced; the text outside the markers is kept as it is. */
export function renderConfigDoc(page: string): string {
  const start = page.indexOf(START);
  const end = page.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${CONFIG_DOC}: the settings markers are missing`);
  return page.slice(0, start) + renderSettingsTable() + page.slice(end + END.length);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(CONFIG_DOC, renderConfigDoc(readFileSync(CONFIG_DOC, "utf8")));
  console.log(`wrote ${CONFIG_DOC}`);
}
