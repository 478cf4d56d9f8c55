import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Authenticator, CredentialHeaders } from "../../auth/authenticate.ts";
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

/** The rate-limit key of a client address: refused credentials of every kind spend it. */
const addressKey = (ip: string): string => `ip:${ip}`;

/** 429 while the client address has spent its allowance on refused credentials. */
export async function assertAddressAdmitted(limiter: RateLimiter, ip: string): Promise<void> {
  const result = await limiter.peek(addressKey(ip));
  if (!result.allowed) throw rateLimited(result.retryAfterMs / 1000);
}

/**
 * A refused credential (an API key or token, a sign-in link, a device cookie) spends the client
 * address's allowance, so guessing is throttled; 429 once it is spent.
 */
export async function spendRefusedCredential(limiter: RateLimiter, ip: string): Promise<void> {
  const result = await limiter.consume(addressKey(ip));
  if (!result.allowed) throw rateLimited(result.retryAfterMs / 1000);
}

/**
 * The one admission path of every authenticated route (the API and /plants alike):
 * - a failed authentication spends the client address's allowance (key guessing is throttled);
 * - an address whose allowance is spent gets 429 even with a correct credential;
 * - a good credential spends its own allowance and its user's, so N keys do not buy N× the limit.
 * Throws RATE_LIMITED (429) or UNAUTHORIZED (401); returns the caller otherwise.
 */
export async function admitRequest(
  auth: Authenticator,
  limiter: RateLimiter,
  headers: CredentialHeaders,
  ip: string,
): Promise<Principal> {
  const outcome = await auth.authenticate(headers);
  if (!outcome.ok) {
    await spendRefusedCredential(limiter, ip);
    throw new AppError("UNAUTHORIZED", MESSAGES[outcome.reason]);
  }
  const { principal } = outcome;
  await assertAddressAdmitted(limiter, ip);
  for (const key of [principal.credentialId, `user:${principal.userId}`]) {
    const result = await limiter.consume(key);
    if (!result.allowed) throw rateLimited(result.retryAfterMs / 1000);
  }
  return principal;
}

/** Authenticates and admits (admitRequest) every request of the encapsulated scope it is installed in. */
export function installAuthentication(app: FastifyInstance, auth: Authenticator, limiter: RateLimiter): void {
  app.decorateRequest("principal", null);
  app.addHook("onRequest", async (req) => {
    req.principal = await admitRequest(auth, limiter, req.headers, req.ip);
  });
}
