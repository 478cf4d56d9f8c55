// The SDK's documentation examples as files a compiler can check: every ```ts block of DOC_FILES,
// taken from the Markdown as it stands (never copied by hand), becomes one module, verbatim. The
// documents promise that each example is a complete module (it imports what it uses and compiles
// as it stands), so nothing is added around it. Used by scripts/sdk-pack-test.mjs, which compiles
// them against the packed SDK under `module`/`moduleResolution` node16, nodenext and bundler.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const DOC_FILES = ["docs/api.md", "sdk/README.md"];

/** The ```ts blocks of a Markdown file, each with the line its code starts on. */
export function tsBlocks(markdown) {
  const blocks = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== "```ts") continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end].trim() !== "```") end++;
    blocks.push({ line: start + 1, code: lines.slice(start, end).join("\n") });
    i = end;
  }
  return blocks;
}

/**
 * One module per block: `{ name, source, text }`. `name` is safe as a file name and ends with the
 * Markdown line the code starts on; after the one-line header, the module's line N is that
 * line + N - 2 of the Markdown.
 */
export function exampleModules(repo) {
  return DOC_FILES.flatMap((file) =>
    tsBlocks(readFileSync(join(repo, file), "utf8")).map((block) => {
      const source = `${file}:${block.line.toString()}`;
      return {
        name: `${file.replace(/[^A-Za-z0-9]+/g, "-")}-${block.line.toString()}`,
        source,
        text: `// ${source}, extracted by scripts/doc-examples.mjs\n${block.code}\n`,
      };
    }),
  );
}
