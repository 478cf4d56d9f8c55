import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { sessionOpenerKeyOf } from "../../auth/principal.ts";
import type { RenewalRefusal } from "../../auth/sessions.ts";
import { AppError, forbidden } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { rememberDevice } from "../device-cookie.ts";
import {
  OpenSessionBody,
  SessionPolicyReply,
  SessionReply,
  toSessionPolicyReply,
  toSessionReply,
} from "../schemas/auth.ts";
import { errorResponses, ref } from "../schemas/common.ts";
import { documentRequest, TAG } from "../schemas/openapi.ts";

const NOT_CONFIGURED = "Sessions are not configured on this server (JWT_SECRET)";

const refusalError = (reason: RenewalRefusal): AppError => {
  switch (reason) {
    case "not_a_session":
      return forbidden(
        "Only a dashboard session renews; an API key opens one with POST /api/v1/auth/session",
      );
    case "limit_reached":
      return new AppError("UNAUTHORIZED", "The session reached its SESSION_MAX_HOURS limit; sign in again");
    case "not_configured":
      return new AppError("INTERNAL_ERROR", NOT_CONFIGURED);
    case "ended":
      return new AppError("UNAUTHORIZED", "The session has ended; sign in again");
  }
};

export const authSessionRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.post(
    "/api/v1/auth/session",
    {
      schema: {
        operationId: "createSession",
        summary: "Open a session",
        description:
          "Exchange a `custom` API key for a short-lived JWT (used by the dashboard); the session dies with the key. Integration keys and sessions get 403. With `remember_device: true` the reply also sets the remembered device's HttpOnly cookie (see POST /api/v1/auth/device).",
        tags: [TAG.auth],
        body: OpenSessionBody,
        response: {
          200: ref(SessionReply, "The session token"),
          ...errorResponses(400, 401, 403, 429, 500),
        },
      },
      // 403 for an integration key or a session before the body is validated.
      onRequest: async (req) => void sessionOpenerKeyOf(principalOf(req)),
      // The body is optional: no body opens a session without remembering the browser.
      preValidation: async (req) => {
        req.body ??= {};
      },
      // One session row of ~100 bytes, which DATA_DIR_MIN_FREE_MB's margin absorbs: the
      // dashboard still opens (and shows its reads) on a nearly full disk.
      config: { writesNothing: true, swaggerTransform: documentRequest({}, { optionalBody: true }) },
    },
    async (req, reply) => {
      const p = principalOf(req);
      const keyId = sessionOpenerKeyOf(p);
      const session = await deps.sessions.open(p.userId, keyId);
      if (!session) throw new AppError("INTERNAL_ERROR", NOT_CONFIGURED);
      const remembered =
        req.body.remember_device === true
          ? await rememberDevice(deps, req, reply, p.userId, keyId)
          : undefined;
      return toSessionReply(session, p.userId, remembered);
    },
  );

  app.post(
    "/api/v1/auth/session/refresh",
    {
      schema: {
        operationId: "refreshSession",
        summary: "Renew a session",
        description:
          "A live session token gets a new one (same user, same key, a fresh `expires_at`), until `renewable_until` (sign-in + SESSION_MAX_HOURS). The token renewed stops working 30 s later (the grace lets the dashboard's other tabs take the new one). 401 once the session expired, was signed out, its key was revoked or the cap is reached; 403 for an API key or an external JWT.",
        tags: [TAG.auth],
        response: { 200: ref(SessionReply, "The renewed session"), ...errorResponses(401, 403, 429, 500) },
      },
      config: { writesNothing: true },
    },
    async (req) => {
      const p = principalOf(req);
      const renewal = await deps.sessions.renew(p);
      if (!renewal.ok) throw refusalError(renewal.reason);
      return toSessionReply(renewal.session, p.userId);
    },
  );

  app.delete(
    "/api/v1/auth/session",
    {
      schema: {
        operationId: "deleteSession",
        summary: "Sign out",
        description:
          "Ends the caller's dashboard session on the server: every token of it (the current one and any renewed from it) answers 401 from now on, on every node. 403 for an API key or an external JWT.",
        tags: [TAG.auth],
        response: { 204: Type.Null({ description: "Signed out" }), ...errorResponses(401, 403, 429, 500) },
      },
      config: { writesNothing: true },
    },
    async (req, reply) => {
      const p = principalOf(req);
      if (p.source !== "frontend" || !p.session) throw refusalError("not_a_session");
      await deps.sessions.signOut(p);
      return reply.status(204).send(null);
    },
  );
};

/** Outside the authenticated scope: the sign-in form states the lifetime before anyone signs in. */
export const sessionPolicyRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.get(
    "/api/v1/auth/session/policy",
    {
      schema: {
        operationId: "getSessionPolicy",
        summary: "Session lifetime",
        description:
          "How long a dashboard session lasts (SESSION_TTL_SECONDS), how long renewals may extend it (SESSION_MAX_HOURS) and how long a remembered browser stays remembered (DEVICE_REMEMBER_DAYS). Needs no credentials.",
        tags: [TAG.auth],
        security: [],
        response: { 200: ref(SessionPolicyReply, "The session lifetime"), ...errorResponses(500) },
      },
    },
    async () => toSessionPolicyReply(deps.jwt.sessionPolicy, deps.devices.lifetimeMs),
  );
};
