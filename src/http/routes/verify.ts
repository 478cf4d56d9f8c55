import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AppError, dependencyFailed } from "../../lib/app-error.ts";
import type { RealtimeOutcome } from "../../realtime/service.ts";
import type { HttpDeps } from "../deps.ts";
import { principalOf } from "../plugins/auth.ts";
import { errorResponses, ref } from "../schemas/common.ts";
import { documentRequest, TAG } from "../schemas/openapi.ts";
import {
  TimeoutReply,
  toVerificationReply,
  VerificationReply,
  VerifyBody,
  VerifyBodyDocumented,
} from "../schemas/verification.ts";

export const verifyRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  app.post(
    "/api/v1/verify",
    {
      schema: {
        operationId: "verifyEmail",
        summary: "Verify one address",
        description:
          "Realtime verification of one address. 1 credit unless the result is `unknown` or the same address was paid for in the last 24 hours (answers served from the cache included). When the service's own DNS resolvers or SOCKS proxy do not answer, 424 (DEPENDENCY_TIMEOUT, DEPENDENCY_UNAVAILABLE or DEPENDENCY_RATE_LIMIT), nothing charged; a failure of the address's own domain (its DNS servers time out or SERVFAIL) is a result, `unknown` with `checks.dns` in `error`. Input that is not address-shaped is a 400; address-shaped input that breaks the syntax rules is a result with status `invalid_syntax`.",
        tags: [TAG.verification],
        body: VerifyBody,
        response: {
          200: ref(VerificationReply, "The verification result"),
          408: ref(
            TimeoutReply,
            "The deadline passed; `result` holds the partial result (VERIFICATION_TIMEOUT)",
          ),
          ...errorResponses(400, 401, 402, 404, 424, 429, 500),
        },
      },
      config: { swaggerTransform: documentRequest({ body: VerifyBodyDocumented }) },
    },
    async (req) => {
      const outcome = await deps.realtime.verifyRealtime(principalOf(req), req.body.email);
      if (!("record" in outcome)) throw refusalError(outcome);
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

/** The service's refusals as the spec's 402, 429 and 424 answers. */
function refusalError(refusal: Exclude<RealtimeOutcome, { record: unknown }>): AppError {
  switch (refusal.kind) {
    case "insufficient_credits":
      return new AppError("INSUFFICIENT_CREDITS", "Insufficient credits: a verification costs 1 credit");
    case "too_many_in_flight":
      return new AppError(
        "RATE_LIMITED",
        `Too many verifications in progress: at most ${refusal.limit.toString()} addresses per account ` +
          "at once (VERIFY_MAX_IN_FLIGHT_PER_USER); retry when one has finished",
        undefined,
        { headers: { "retry-after": refusal.retryAfterSeconds.toString() } },
      );
    case "dependency_failed":
      return dependencyFailed(refusal.failure);
  }
}
