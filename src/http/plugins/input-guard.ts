import type { FastifyInstance, FastifyRequest } from "fastify";
import { unstorableTextReason } from "../../lib/storable-text.ts";
import { MAX_ERROR_DETAILS, type AjvIssue } from "../errors.ts";

interface Frame {
  /** The container's own key in its parent ("" for the root). */
  key: string;
  /** Array elements, or the object's values in the order of `keys`. */
  values: unknown[];
  keys: string[] | null;
  next: number;
}

/** Deeper paths are cut here: a 2 M-deep nesting must not make a 4 MB field name. */
const MAX_POINTER_DEPTH = 32;

// A JSON Pointer, as ajv writes `instancePath`, so errors.ts names the field the same way.
function pointerOf(frames: Frame[], key: string | null): string {
  const depth = frames.length - 1 + (key === null ? 0 : 1);
  const keys = frames.slice(1, MAX_POINTER_DEPTH + 1).map((f) => f.key);
  if (key !== null && depth <= MAX_POINTER_DEPTH) keys.push(key);
  if (depth > MAX_POINTER_DEPTH) keys.push("…");
  return keys.map((k) => "/" + k.replace(/~/g, "~0").replace(/\//g, "~1")).join("");
}

const keyAt = (frame: Frame, i: number): string => (frame.keys ? frame.keys[i]! : String(i));

function frameOf(key: string, value: unknown): Frame | null {
  if (typeof value !== "object" || value === null) return null;
  if (Array.isArray(value)) return { key, values: value as unknown[], keys: null, next: 0 };
  // Parsed data: a plain object, or a null-prototype dictionary (the query parser's objects have
  // a prototype made by Object.create(null)). A Buffer or a stream is not parsed text.
  const proto = Object.getPrototypeOf(value) as object | null;
  if (proto !== null && Object.getPrototypeOf(proto) !== null) return null;
  const keys = Object.keys(value);
  return { key, values: keys.map((k) => (value as Record<string, unknown>)[k]), keys, next: 0 };
}

/**
 * Every string (values and property names) in a parsed request part whose text cannot be stored,
 * as ajv-style issues in document order: at most MAX_ERROR_DETAILS + 1 (enough for the error to
 * say it was cut). Iterative and allocation-free for scalars, so a 2.6 M-item array or a 2 M-deep
 * nesting costs linear time and no call stack.
 */
function findUnstorableText(root: unknown): AjvIssue[] {
  const issues: AjvIssue[] = [];
  const full = (): boolean => issues.length > MAX_ERROR_DETAILS;
  const report = (instancePath: string, message: string): void => {
    issues.push({ instancePath, keyword: "text", message, params: {} });
  };
  if (typeof root === "string") {
    const reason = unstorableTextReason(root);
    if (reason) report("", reason);
    return issues;
  }
  const rootFrame = frameOf("", root);
  if (!rootFrame) return issues;
  const frames: Frame[] = [rootFrame];
  const enter = (frame: Frame): void => {
    for (const key of frame.keys ?? []) {
      const reason = unstorableTextReason(key);
      if (reason) report(pointerOf(frames, null), `has a property name that ${reason}`);
    }
  };
  enter(rootFrame);
  while (frames.length > 0 && !full()) {
    const top = frames[frames.length - 1]!;
    if (top.next >= top.values.length) {
      frames.pop();
      continue;
    }
    const i = top.next++;
    const value = top.values[i];
    if (typeof value === "string") {
      const reason = unstorableTextReason(value);
      if (reason) report(pointerOf(frames, keyAt(top, i)), reason);
      continue;
    }
    if (typeof value !== "object" || value === null) continue;
    const child = frameOf(keyAt(top, i), value);
    if (child) {
      frames.push(child);
      enter(child);
    }
  }
  return issues;
}

class UnstorableTextError extends Error {
  readonly statusCode = 400;
  readonly code = "FST_ERR_VALIDATION";
  constructor(
    readonly validation: AjvIssue[],
    readonly validationContext: string,
  ) {
    super("Request contains text that cannot be stored");
  }
}

const PARTS = ["params", "query", "body", "headers"] as const;
const CONTEXT: Record<(typeof PARTS)[number], string> = {
  params: "params",
  query: "querystring",
  body: "body",
  headers: "headers",
};

/**
 * Refuses, before validation and for every route (schema or not), a request whose path params,
 * query, JSON body or headers carry text PostgreSQL cannot store: 400 in the spec's envelope
 * naming the field (it is thrown as a validation error, so the sample endpoint answers its own
 * flat 400 too). Multipart forms are checked where they are read (routes/uploads.ts).
 */
export function installInputGuard(app: FastifyInstance): void {
  app.addHook("preValidation", async (req: FastifyRequest) => {
    for (const part of PARTS) {
      const issues = findUnstorableText(req[part]);
      if (issues.length > 0) throw new UnstorableTextError(issues, CONTEXT[part]);
    }
  });
}
