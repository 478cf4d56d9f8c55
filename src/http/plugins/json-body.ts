import type { FastifyInstance } from "fastify";

/**
 * Fastify's JSON parser (with its prototype-poisoning protection), except that an empty body is
 * read as "no body": clients often send Content-Type: application/json on bodiless requests.
 */
export function installJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    if (typeof body === "string" && body.trim() === "") return done(null, undefined);
    parseJson(req, typeof body === "string" ? body : body.toString("utf8"), done);
  });
}
