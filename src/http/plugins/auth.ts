import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Authenticator } from "../../auth/authenticate.ts";
import type { Principal } from "../../auth/principal.ts";
import { AppError, rateLimited } from "../../lib/app-error.ts";
import type { RateLimiter } from "../../ratelimit/limiter.ts";

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const MESSAGES = {
  missing: "Missing credentials: send Authorization: Bearer <API key or JWT> or X-API-Key",
  malformed: "Malformed Authorization header: expected Bearer <token>",
  invalid: "Invalid, expired or deactivated credentials",
} as const;

/** The authenticated caller; only callable on routes behind installAuthentication. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new AppError("UNAUTHORIZED", MESSAGES.missing);
  return req.principal;
}

/**
 * Authenticates every request of the encapsulated scope it is installed in, then rate-limits per
 * credential. Failed attempts are limited per client address so key guessing is throttled too.
 */
export function installAuthentication(app: FastifyInstance, auth: Authenticator, limiter: RateLimiter): void {
  app.decorateRequest("principal", null);
  app.addHook("onRequest", async (req) => {
    const outcome = await auth.authenticate(req.headers);
    const limitKey = outcome.ok ? outcome.principal.credentialId : `ip:${req.ip}`;
    const admission = await limiter.consume(limitKey);
    if (!admission.allowed) throw rateLimited(admission.retryAfterMs / 1000);
    if (!outcome.ok) throw new AppError("UNAUTHORIZED", MESSAGES[outcome.reason]);
    req.principal = outcome.principal;
  });
}
