import { Ajv, type Options, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import type { FastifyInstance, FastifySchema } from "fastify";
import { MAX_ERROR_DETAILS, type AjvIssue } from "../errors.ts";

// ajv-formats is CommonJS; under ESM interop its function may sit on `.default`.
type AddFormats = (ajv: Ajv) => Ajv;
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ??
  (addFormatsModule as unknown as AddFormats);

function makeAjv(coerceTypes: Options["coerceTypes"]): Ajv {
  const ajv = new Ajv({
    // Every bad field reported at once, not just the first (the spec's `details` is a list).
    // allErrors also means a failed maxItems does not stop ajv from validating every item, which
    // is why sizes are checked first, by checkSizes below.
    allErrors: true,
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
  });
  addFormats(ajv);
  ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isSafeInteger(n) });
  ajv.addFormat("int32", {
    type: "number",
    validate: (n: number) => Number.isInteger(n) && Math.abs(n) <= 2 ** 31,
  });
  return ajv;
}

/** The JSON Schema keywords the size checks read (TypeBox schemas are plain JSON Schema). */
interface SchemaNode {
  type?: unknown;
  maxItems?: number;
  maxProperties?: number;
  items?: unknown;
  prefixItems?: unknown;
  properties?: Record<string, SchemaNode>;
  patternProperties?: Record<string, SchemaNode>;
  additionalProperties?: unknown;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  allOf?: SchemaNode[];
}

const isSchema = (s: unknown): s is SchemaNode => typeof s === "object" && s !== null;
const subSchemas = (list: unknown): SchemaNode[] => (Array.isArray(list) ? list.filter(isSchema) : []);

/**
 * Every request array needs a maxItems and every open-ended map a maxProperties: with allErrors,
 * an unbounded array of 2.6 M bad items produced 2.6 M errors (a 140 MB answer, 27 s, +3 GB).
 * Checked when a route is registered, so a new unbounded schema fails at start-up, not in prod.
 */
export function assertBoundedSchema(schema: unknown, path = "#"): void {
  if (!isSchema(schema)) return;
  const isArray = schema.type === "array" || schema.items !== undefined || schema.prefixItems !== undefined;
  if (isArray && typeof schema.maxItems !== "number")
    throw new Error(`request schema ${path}: an array needs maxItems (checked before its items)`);
  const isMap = isSchema(schema.additionalProperties) || schema.patternProperties !== undefined;
  if (isMap && typeof schema.maxProperties !== "number")
    throw new Error(
      `request schema ${path}: a map (additionalProperties/patternProperties) needs maxProperties`,
    );
  if (isSchema(schema.items)) assertBoundedSchema(schema.items, `${path}/items`);
  subSchemas(schema.prefixItems).forEach((s, i) => assertBoundedSchema(s, `${path}/prefixItems/${i}`));
  for (const [k, s] of Object.entries(schema.properties ?? {}))
    assertBoundedSchema(s, `${path}/properties/${k}`);
  for (const [k, s] of Object.entries(schema.patternProperties ?? {}))
    assertBoundedSchema(s, `${path}/patternProperties/${k}`);
  if (isSchema(schema.additionalProperties))
    assertBoundedSchema(schema.additionalProperties, `${path}/additionalProperties`);
  for (const key of ["anyOf", "oneOf", "allOf"] as const)
    subSchemas(schema[key]).forEach((s, i) => assertBoundedSchema(s, `${path}/${key}/${i}`));
}

/**
 * Every object of a request body refuses properties it does not declare (the spec lists each
 * body's fields and no others), or is a bounded map: without it, ajv accepted an object of 250,000
 * unknown properties. Checked when a route is registered, like assertBoundedSchema.
 */
export function assertClosedBody(schema: unknown, path = "#"): void {
  if (!isSchema(schema)) return;
  if (
    schema.properties !== undefined &&
    schema.additionalProperties !== false &&
    !isSchema(schema.additionalProperties)
  )
    throw new Error(`request schema ${path}: a body object needs additionalProperties: false`);
  if (isSchema(schema.items)) assertClosedBody(schema.items, `${path}/items`);
  subSchemas(schema.prefixItems).forEach((s, i) => assertClosedBody(s, `${path}/prefixItems/${i}`));
  for (const [k, s] of Object.entries(schema.properties ?? {}))
    assertClosedBody(s, `${path}/properties/${k}`);
  if (isSchema(schema.additionalProperties))
    assertClosedBody(schema.additionalProperties, `${path}/additionalProperties`);
  for (const key of ["anyOf", "oneOf", "allOf"] as const)
    subSchemas(schema[key]).forEach((s, i) => assertClosedBody(s, `${path}/${key}/${i}`));
}

function jsonTypeMatches(schema: SchemaNode, data: unknown): boolean {
  const types = Array.isArray(schema.type) ? (schema.type as unknown[]) : [schema.type];
  if (schema.type === undefined) return true;
  if (Array.isArray(data)) return types.includes("array");
  if (data === null) return types.includes("null");
  if (typeof data === "object") return types.includes("object");
  return true;
}

const escapeKey = (k: string): string => k.replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * The first array or object of `data` bigger than its schema allows, found without looking at
 * any item: reading lengths and key counts only, descending only where the schema does (so its
 * depth is the schema's, not the data's). Objects that forbid unknown properties may carry at
 * most MAX_ERROR_DETAILS of them, so ajv reports at most that many "is not allowed".
 */
function checkSizes(schema: unknown, data: unknown, path = ""): AjvIssue | null {
  if (!isSchema(schema) || typeof data !== "object" || data === null) return null;
  const alternatives = [...subSchemas(schema.anyOf), ...subSchemas(schema.oneOf)].filter((s) =>
    jsonTypeMatches(s, data),
  );
  if (alternatives.length > 0) {
    // The data is too big only if it is too big for every alternative of its type.
    let first: AjvIssue | null = null;
    for (const alt of alternatives) {
      const issue = checkSizes(alt, data, path);
      if (!issue) {
        first = null;
        break;
      }
      first ??= issue;
    }
    if (first) return first;
  }
  for (const part of subSchemas(schema.allOf)) {
    const issue = checkSizes(part, data, path);
    if (issue) return issue;
  }
  if (Array.isArray(data)) {
    if (typeof schema.maxItems === "number" && data.length > schema.maxItems) {
      return {
        instancePath: path,
        keyword: "maxItems",
        params: { limit: schema.maxItems },
        message: `must contain at most ${schema.maxItems} items (got ${data.length})`,
      };
    }
    const items = schema.items;
    if (
      isSchema(items) &&
      (items.type === "array" || items.type === "object" || items.anyOf || items.oneOf)
    ) {
      for (let i = 0; i < data.length; i++) {
        const issue = checkSizes(items, data[i], `${path}/${i}`);
        if (issue) return issue;
      }
    }
    return null;
  }
  const keys = Object.keys(data);
  const declared = Object.keys(schema.properties ?? {});
  if (typeof schema.maxProperties === "number" && keys.length > schema.maxProperties) {
    return {
      instancePath: path,
      keyword: "maxProperties",
      params: { limit: schema.maxProperties },
      message: `must have at most ${schema.maxProperties} properties (got ${keys.length})`,
    };
  }
  if (schema.additionalProperties === false && keys.length > declared.length + MAX_ERROR_DETAILS) {
    const known = new Set(declared);
    const unknown = keys.filter((k) => !known.has(k)).length;
    return {
      instancePath: path,
      keyword: "maxProperties",
      params: { limit: declared.length + MAX_ERROR_DETAILS },
      message: `has ${unknown} properties that are not allowed (allowed: ${declared.join(", ")})`,
    };
  }
  for (const key of declared) {
    if (!Object.hasOwn(data, key)) continue;
    const issue = checkSizes(
      schema.properties![key],
      (data as Record<string, unknown>)[key],
      `${path}/${escapeKey(key)}`,
    );
    if (issue) return issue;
  }
  return null;
}

/** ajv's validator behind the size checks; ajv's own properties (schemaEnv…) stay visible to Fastify. */
function sizeCheckedValidator(schema: unknown, full: ValidateFunction): ValidateFunction {
  const validate = ((data: unknown, ctx?: Parameters<ValidateFunction>[1]) => {
    const issue = checkSizes(schema, data);
    if (issue) {
      validate.errors = [issue as NonNullable<ValidateFunction["errors"]>[number]];
      return false;
    }
    const ok = full(data, ctx);
    validate.errors = full.errors;
    return ok;
  }) as ValidateFunction;
  return Object.assign(validate, { schema: full.schema, schemaEnv: full.schemaEnv });
}

/**
 * Query strings and path params are text, so they are coerced ("limit=10" → 10). JSON bodies are
 * not: `{"email": 123}` must be a 400, not silently become "123". Every validator checks sizes
 * before items (see checkSizes); every body schema is closed (see assertClosedBody).
 */
export function installValidators(app: FastifyInstance, sharedSchemas: object[]): void {
  const strict = makeAjv(false);
  const coercing = makeAjv("array");
  for (const s of sharedSchemas) {
    strict.addSchema(s);
    coercing.addSchema(s);
  }
  app.setValidatorCompiler<FastifySchema>(({ schema, httpPart, url, method }) => {
    assertBoundedSchema(schema, `${method} ${url} ${httpPart}`);
    if (httpPart === "body") assertClosedBody(schema, `${method} ${url} body`);
    return sizeCheckedValidator(
      schema,
      httpPart === "body" ? strict.compile(schema) : coercing.compile(schema),
    );
  });
}
