// `npm run lint:docs` (part of `npm run lint`): every relative link and image of the
// repository's Markdown resolves. A link is `[text](target)` or an HTML `src`/`href`; its file
// must exist relative to the linking file, and its `#anchor` must be a heading of the target
// (GitHub's slugs, github-slugger) or an explicit `id`/`name`. Links out (http:, mailto:) are
// not followed: CI has no internet. Code blocks and code spans are not links.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import GithubSlugger from "github-slugger";

const ROOT = resolve(new URL("..", import.meta.url).pathname);

const markdownFiles = (): string[] =>
  execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.md"], {
    cwd: ROOT,
    encoding: "utf8",
  })
    .split("\n")
    .filter((f) => f !== "" && !f.startsWith("node_modules/"))
    .map((f) => join(ROOT, f))
    .filter((f) => existsSync(f));

const blank = (code: string): string => code.replace(/[^\n]/g, " ");

/** The text with fenced code blocks blanked (line numbers kept). */
const withoutBlocks = (text: string): string => text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, blank);

/** The text with fenced code blocks and code spans blanked. */
const prose = (text: string): string => withoutBlocks(text).replace(/(`+)[^`\n][\s\S]*?\1/g, blank);

function linksOf(text: string): Array<{ target: string; line: number }> {
  const body = prose(text);
  const found: Array<{ target: string; line: number }> = [];
  const patterns = [
    /\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g,
    /\b(?:src|href)="([^"]+)"/g,
    /^\[[^\]]+\]:\s+(\S+)/gm,
  ];
  for (const pattern of patterns)
    for (const m of body.matchAll(pattern))
      found.push({ target: m[1]!, line: body.slice(0, m.index).split("\n").length });
  return found;
}

const anchorCache = new Map<string, Set<string>>();

/** The anchors a Markdown file offers: its headings' slugs and explicit ids and names. */
function anchorsOf(file: string): Set<string> {
  const cached = anchorCache.get(file);
  if (cached) return cached;
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  const body = withoutBlocks(readFileSync(file, "utf8"));
  for (const m of body.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    // GitHub slugs a heading's text: links and tags give their text, code spans their code.
    const heading = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/<[^>]+>/g, "")
      .replace(/`/g, "");
    anchors.add(slugger.slug(heading));
  }
  for (const m of prose(body).matchAll(/\b(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  anchorCache.set(file, anchors);
  return anchors;
}

const EXTERNAL = /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i;

function problemOf(file: string, target: string): string | null {
  if (EXTERNAL.test(target)) return null;
  const [path = "", anchor] = target.split("#", 2);
  const resolved = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
  if (!existsSync(resolved)) return `${relative(ROOT, resolved)} does not exist`;
  if (anchor === undefined || anchor === "" || !resolved.endsWith(".md") || statSync(resolved).isDirectory())
    return null;
  return anchorsOf(resolved).has(decodeURIComponent(anchor).toLowerCase())
    ? null
    : `${relative(ROOT, resolved)} has no heading #${anchor}`;
}

const broken: string[] = [];
const files = markdownFiles();
let links = 0;
for (const file of files) {
  for (const { target, line } of linksOf(readFileSync(file, "utf8"))) {
    links++;
    const problem = problemOf(file, target);
    if (problem) broken.push(`${relative(ROOT, file)}:${line}: ${target}: ${problem}`);
  }
}
if (broken.length > 0) {
  process.stderr.write(`${broken.length} broken link(s) in the docs:\n${broken.join("\n")}\n`);
  process.exit(1);
}
process.stdout.write(`docs: ${links} links in ${files.length} Markdown files resolve\n`);
