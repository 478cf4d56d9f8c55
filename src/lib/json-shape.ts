// A JSON body is bounded in depth, array length and property counts BEFORE it is parsed.
// JSON.parse builds every value first and the schema's maxItems only runs afterwards, so
// `{"emails":[[[[…` (2 M levels, 4 MB) cost 2 s of blocked event loop and +600 MB each, 2.5 M
// numbers ~200 ms each, and 250,000 unknown properties (2.8 MB) were parsed into one object and
// then accepted. One linear pass over the text, no allocation per value, stops at the first excess.

export interface JsonShapeLimits {
  /** Most nested arrays/objects. */
  maxDepth: number;
  /** Most items in any one array. */
  maxArrayItems: number;
  /** Most properties in any one object. */
  maxObjectKeys: number;
  /** Most properties in all objects of the document together. */
  maxTotalKeys: number;
}

export interface JsonShapeExcess {
  /** Where the excess is, as validation errors name fields ("emails", "body"). */
  field: string;
  reason: string;
}

const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const MAX_KEY_IN_FIELD = 64;

/**
 * The first place where `text` exceeds `limits`, or null. Malformed JSON is not judged here: the
 * parser that runs next reports it.
 */
export function jsonShapeExcess(text: string, limits: JsonShapeLimits): JsonShapeExcess | null {
  // Per open container: its kind, the commas seen at its level (arrays) or its properties
  // (objects: one colon each), and (objects) the key being read.
  const kinds: number[] = [];
  const counts: number[] = [];
  const keys: string[] = [];
  let totalKeys = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i + 1;
      for (i = start; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
      if (expectKey) keys[keys.length - 1] = text.slice(start, Math.min(i, start + MAX_KEY_IN_FIELD));
      continue;
    }
    switch (c) {
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        if (kinds.length >= limits.maxDepth) {
          return { field: fieldAt(kinds, keys), reason: `nests deeper than ${limits.maxDepth} levels` };
        }
        kinds.push(c);
        counts.push(0);
        keys.push("");
        expectKey = c === OPEN_OBJECT;
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        kinds.pop();
        counts.pop();
        keys.pop();
        expectKey = false;
        break;
      case COMMA: {
        const top = kinds.length - 1;
        if (top < 0) break;
        if (kinds[top] === OPEN_ARRAY && ++counts[top]! >= limits.maxArrayItems) {
          return {
            field: fieldAt(kinds, keys),
            reason: `has more than ${limits.maxArrayItems.toLocaleString("en-US")} items`,
          };
        }
        expectKey = kinds[top] === OPEN_OBJECT;
        break;
      }
      case COLON: {
        expectKey = false;
        const top = kinds.length - 1;
        if (kinds[top] !== OPEN_OBJECT) break;
        if (++counts[top]! > limits.maxObjectKeys) {
          return {
            field: fieldAt(kinds, keys),
            reason: `has more than ${limits.maxObjectKeys.toLocaleString("en-US")} properties`,
          };
        }
        if (++totalKeys > limits.maxTotalKeys) {
          return {
            field: "body",
            reason: `has more than ${limits.maxTotalKeys.toLocaleString("en-US")} properties in all`,
          };
        }
        break;
      }
    }
  }
  return null;
}

/**
 * The container holding the excess: "emails", "a.b", "emails[]" (inside arrays of `emails`, runs
 * of arrays said once), or "body" at the top. Positions are not counted: that would cost a
 * counter per level for a message.
 */
function fieldAt(kinds: readonly number[], keys: readonly string[]): string {
  let path = "";
  for (let d = 0; d < kinds.length - 1; d++) {
    if (kinds[d] === OPEN_OBJECT) path = path ? `${path}.${keys[d]}` : keys[d]!;
    else if (!path.endsWith("[]")) path = `${path}[]`;
  }
  return path || "body";
}
