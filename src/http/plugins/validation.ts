import { Ajv, type Options } from "ajv";
import addFormatsModule from "ajv-formats";
import type { FastifyInstance, FastifySchema } from "fastify";

// ajv-formats is CommonJS; under ESM interop its function may sit on `.default`.
type AddFormats = (ajv: Ajv) => Ajv;
const addFormats: AddFormats =
  (addFormatsModule as unknown as { default?: AddFormats }).default ??
  (addFormatsModule as unknown as AddFormats);

function makeAjv(coerceTypes: Options["coerceTypes"]): Ajv {
  const ajv = new Ajv({
    // Every bad field reported at once, not just the first (the spec's `details` is a list).
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

/**
 * Query strings and path params are text, so they are coerced ("limit=10" → 10). JSON bodies are
 * not: `{"email": 123}` must be a 400, not silently become "123".
 */
export function installValidators(app: FastifyInstance, sharedSchemas: object[]): void {
  const strict = makeAjv(false);
  const coercing = makeAjv("array");
  for (const s of sharedSchemas) {
    strict.addSchema(s);
    coercing.addSchema(s);
  }
  app.setValidatorCompiler<FastifySchema>(({ schema, httpPart }) =>
    httpPart === "body" ? strict.compile(schema) : coercing.compile(schema),
  );
}
