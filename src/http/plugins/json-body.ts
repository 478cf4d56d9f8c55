import type { FastifyInstance } from "fastify";
import { validationError } from "../../lib/app-error.ts";
import { jsonShapeExcess, type JsonShapeLimits } from "../../lib/json-shape.ts";

/**
 * Shape bounds checked on the raw text before JSON.parse builds anything. No operation takes
 * nested bodies or more than 10,000 items; the array bound is ten times that so that lists just
 * over the spec's limit still get the schema's own message (maxItems), while millions of items
 * are refused in one pass without being built. Likewise no request object declares more than a
 * handful of properties: up to 1,000 per object the schema answers (it names up to 20 unknown
 * ones, then counts them: plugins/validation.ts), beyond that, or 10,000 in all, this does.
 */
const JSON_BODY_LIMITS: JsonShapeLimits = {
  maxDepth: 32,
  maxArrayItems: 100_000,
  maxObjectKeys: 1_000,
  maxTotalKeys: 10_000,
};

/**
 * Fastify's JSON parser (with its prototype-poisoning protection), except that an empty body is
 * read as "no body": clients often send Content-Type: application/json on bodiless requests.
 * Fastify's built-in text/plain parser is removed: the API takes JSON only, and a fetch() with a
 * string body and no header (sent as text/plain) must be told its content type is wrong, like any
 * other type, instead of getting a misleading "body must be object". Bodies deeper, longer or
 * with more properties than JSON_BODY_LIMITS are refused before parsing.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser("text/plain");
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.trim() === "") return done(null, undefined);
    const excess = jsonShapeExcess(text, JSON_BODY_LIMITS);
    if (excess)
      return done(
        validationError("Request body nests too deep, or has too many items or properties", [excess]),
        undefined,
      );
    void parseJson(req, text, done);
  });
}
