import type { FastifyInstance } from "fastify";

/**
 * Fastify's JSON parser (with its prototype-poisoning protection), except that an empty body is
 * read as "no body": clients often send Content-Type: application/json on bodiless requests.
 * Fastify's built-in text/plain parser is removed: the API takes JSON only, and a fetch() with a
 * string body and no header (sent as text/plain) must be told its content type is wrong, like any
 * other type, instead of getting a misleading "body must be object".
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser("text/plain");
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    if (typeof body === "string" && body.trim() === "") return done(null, undefined);
    void parseJson(req, typeof body === "string" ? body : body.toString("utf8"), done);
  });
}
