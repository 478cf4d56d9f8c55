import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AppError } from "../../lib/app-error.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses } from "../schemas/common.ts";
import { TimeoutReply, toVerificationReply, VerificationReply, VerifyBody } from "../schemas/verification.ts";

export const verifyRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.post(
    "/api/v1/verify",
    {
      schema: {
        tags: ["verification"],
        description:
          "Realtime verification of one address. 1 credit unless the result is unknown or the same address was paid for in the last 24 h.",
        body: VerifyBody,
        response: {
          200: VerificationReply,
          408: TimeoutReply,
          ...errorResponses(400, 401, 402, 404, 429, 500),
        },
      },
    },
    async (req) => {
      const outcome = await deps.verifications.verifyRealtime(principalOf(req), req.body.email);
      const reply = toVerificationReply(outcome.record);
      if (outcome.kind === "timed_out") {
        throw new AppError(
          "VERIFICATION_TIMEOUT",
          "Verification did not finish within the deadline",
          undefined,
          {
            extra: { result: reply },
          },
        );
      }
      return reply;
    },
  );
};
