// One-time dashboard sign-in links (auth/sign-in-links.ts, docs/session-threat-model.md): minted
// by a `custom` API key, redeemed without credentials by the dashboard's #/sign-in?link=… route.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AppError, forbidden } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { rememberDevice } from "../device-cookie.ts";
import { assertAddressAdmitted, principalOf, spendRefusedCredential } from "../plugins/auth.ts";
import {
  RedeemSignInLinkBody,
  SessionReply,
  SignInLinkReply,
  toSessionReply,
  toSignInLinkReply,
} from "../schemas/auth.ts";
import { errorResponses, ref } from "../schemas/common.ts";
import { TAG } from "../schemas/openapi.ts";

const REFUSED = "The sign-in link is invalid, already used, expired, or its API key was revoked";

/** Inside the authenticated scope. */
export const signInLinkRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.post(
    "/api/v1/auth/sign-in-links",
    {
      schema: {
        operationId: "createSignInLink",
        summary: "Mint a sign-in link",
        description:
          "A one-time link that opens a dashboard session of the calling key without typing it: good for 15 minutes and one use, tied to the key (revoking the key refuses the link and ends the session it opened). Only a `custom` API key may mint one: integration keys cannot open sessions, and a session must not mint its successor (403).",
        tags: [TAG.auth],
        response: {
          201: ref(SignInLinkReply, "The link, shown once"),
          ...errorResponses(401, 403, 429, 500),
        },
      },
      // One row of ~200 bytes, like a session: getting back in works on a nearly full disk.
      config: { writesNothing: true },
    },
    async (req, reply) => {
      const p = principalOf(req);
      if (p.source !== "api_key" || !p.apiKeyId)
        throw forbidden("Only an API key can mint a sign-in link: a session cannot mint its successor");
      const link = await deps.signInLinks.mint(p.userId, p.apiKeyId);
      return reply.status(201).send(toSignInLinkReply(link, `${req.protocol}://${req.host}`));
    },
  );
};

/**
 * Outside the authenticated scope (the link is the credential). A refused link spends the client
 * address's allowance as a failed authentication does, so tokens cannot be guessed at speed.
 */
export const signInLinkRedeemRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (
  app,
  { deps },
) => {
  app.post(
    "/api/v1/auth/sign-in-links/redeem",
    {
      schema: {
        operationId: "redeemSignInLink",
        summary: "Sign in with a link",
        description:
          "Uses a sign-in link once and answers a session of the key it is tied to (as `POST /api/v1/auth/session` would, `remember_device` included). Needs no credentials: the token is one. 401 when the link is unknown, used, expired or its key revoked.",
        tags: [TAG.auth],
        security: [],
        body: RedeemSignInLinkBody,
        response: { 200: ref(SessionReply, "The session token"), ...errorResponses(400, 401, 429, 500) },
      },
      config: { writesNothing: true },
    },
    async (req, reply) => {
      await assertAddressAdmitted(deps.rateLimiter, req.ip);
      const redeemed = await deps.signInLinks.redeem(req.body.token);
      if (redeemed.ok) {
        const { userId, apiKeyId, session } = redeemed;
        const remembered =
          req.body.remember_device === true
            ? await rememberDevice(deps, req, reply, userId, apiKeyId)
            : undefined;
        return toSessionReply(session, userId, remembered);
      }
      await spendRefusedCredential(deps.rateLimiter, req.ip);
      throw new AppError("UNAUTHORIZED", REFUSED);
    },
  );
};
