// The tags of an XML text with their exact spans, so that a part can be rewritten by splicing:
// every byte between the tags we change stays as the writer wrote it (prefixes, whitespace,
// entity references, attribute order). Only for text a parser has already accepted as
// well-formed (the upload's parse read the same part through saxes); on anything else the
// result is undefined, never a hang: every branch moves forward.

/** One markup item: `open` (<a …>), `empty` (<a …/>), `close` (</a>), or `other` (comments, PIs, CDATA, DOCTYPE). */
export interface XmlTag {
  kind: "open" | "empty" | "close" | "other";
  /** The local name (prefix dropped); "" for `other`. */
  name: string;
  /** The namespace prefix with its colon ("x:"), or "". */
  prefix: string;
  /** Offsets of `<` and one past `>` in the text. */
  start: number;
  end: number;
}

/** Index one past the `>` ending a tag opened at `start`, skipping quoted attribute values. */
function tagEnd(xml: string, start: number): number {
  let quote = "";
  for (let i = start + 1; i < xml.length; i += 1) {
    const c = xml[i];
    if (quote) {
      if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === ">") return i + 1;
  }
  return xml.length;
}

function skipTo(xml: string, from: number, terminator: string): number {
  const at = xml.indexOf(terminator, from);
  return at === -1 ? xml.length : at + terminator.length;
}

// Whitespace, "/" and ">": where a tag's name ends.
const NAME_END = new Set([0x20, 0x09, 0x0a, 0x0d, 0x2f, 0x3e]);

/** The tags of `xml` in document order. */
export function* xmlTags(xml: string): Generator<XmlTag> {
  for (let at = xml.indexOf("<"); at !== -1 && at < xml.length; at = xml.indexOf("<", at)) {
    const start = at;
    if (xml.startsWith("<!--", at)) at = skipTo(xml, at + 4, "-->");
    else if (xml.startsWith("<![CDATA[", at)) at = skipTo(xml, at + 9, "]]>");
    else if (xml.startsWith("<?", at)) at = skipTo(xml, at + 2, "?>");
    else if (xml.startsWith("<!", at)) at = tagEnd(xml, at);
    else {
      const end = tagEnd(xml, at);
      const closing = xml[at + 1] === "/";
      const nameStart = at + (closing ? 2 : 1);
      let nameEnd = nameStart;
      while (nameEnd < end && !NAME_END.has(xml.charCodeAt(nameEnd))) nameEnd += 1;
      const qname = xml.slice(nameStart, nameEnd);
      const kind = closing ? "close" : xml[end - 2] === "/" ? "empty" : "open";
      const colon = qname.indexOf(":");
      yield { kind, name: qname.slice(colon + 1), prefix: qname.slice(0, colon + 1), start, end };
      at = end;
      continue;
    }
    yield { kind: "other", name: "", prefix: "", start, end: at };
  }
}

/** The value of attribute `name` (unprefixed) in a tag's text; undefined when absent. */
export function attributeOf(tag: string, name: string): string | undefined {
  const match = attributePattern(name).exec(tag);
  return match ? (match[2] ?? match[3]) : undefined;
}

// One compiled pattern per attribute name: a sheet of 10,000 rows asks for `r` 100,000 times.
const patterns = new Map<string, RegExp>();

function attributePattern(name: string): RegExp {
  let pattern = patterns.get(name);
  if (!pattern) {
    pattern = new RegExp(`\\s${name}\\s*=\\s*("([^"]*)"|'([^']*)')`);
    patterns.set(name, pattern);
  }
  return pattern;
}

/**
 * The tag with attribute `name` set to `value` (already escaped), or removed when `value` is
 * null; a missing attribute is added before the tag's end.
 */
export function withAttribute(tag: string, name: string, value: string | null): string {
  const pattern = attributePattern(name);
  if (pattern.test(tag)) return tag.replace(pattern, value === null ? "" : ` ${name}="${value}"`);
  if (value === null) return tag;
  const close = tag.endsWith("/>") ? tag.length - 2 : tag.length - 1;
  return `${tag.slice(0, close)} ${name}="${value}"${tag.slice(close)}`;
}
