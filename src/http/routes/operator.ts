import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AppError, rateLimited, validationError } from "../../lib/app-error.ts";
import { safeEqual } from "../../lib/tokens.ts";
import { createFailureLimiter } from "../../ratelimit/failure-limiter.ts";
import type { HttpDeps } from "../deps.ts";
import { installWriteGuard } from "../plugins/write-guard.ts";
import { toApiKeyListItem } from "../schemas/api-keys.ts";
import { ref } from "../schemas/common.ts";
import { CreditTransactionSchema, toTransactionReply } from "../schemas/credits.ts";
import {
  DeactivateUserReply,
  ListUsersQuery,
  ListUsersReply,
  OperatorGrantBody,
  OperatorKeyParams,
  OperatorKeysReply,
  OperatorUserParams,
  OperatorUserSchema,
  QueueHealthReply,
  toOperatorUserReply,
  toQueueHealthReply,
} from "../schemas/operator.ts";

/** Wrong operator tokens one client address may send per window before it is refused (429). */
export const OPERATOR_MAX_FAILURES = 10;
const OPERATOR_FAILURE_WINDOW_SECONDS = 15 * 60;

const PREFIX = "/api/v1/operator";

/**
 * The operator API (console): every user, grants, keys and queue health, for whoever holds
 * ADMIN_TOKEN, from any address (unlike the loopback admin API). Not registered without the
 * token, so every path answers the ordinary 404.
 */
export const operatorRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps }> = async (app, { deps }) => {
  const token = deps.settings.operatorToken;
  if (token === null) return;
  const failures = createFailureLimiter({
    maxFailures: OPERATOR_MAX_FAILURES,
    windowSeconds: OPERATOR_FAILURE_WINDOW_SECONDS,
  });

  app.addHook("onRequest", async (req) => {
    const address = `operator:${req.ip}`;
    const locked = await failures.check(address);
    if (!locked.allowed) throw rateLimited(locked.retryAfterMs / 1000);
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization?.trim() ?? "");
    if (!m || !safeEqual(m[1]!, token)) {
      const after = await failures.fail(address);
      if (!after.allowed) throw rateLimited(after.retryAfterMs / 1000);
      throw new AppError("UNAUTHORIZED", "Operator token required: send Authorization: Bearer <ADMIN_TOKEN>");
    }
    const admission = await deps.rateLimiter.consume("operator");
    if (!admission.allowed) throw rateLimited(admission.retryAfterMs / 1000);
  });
  installWriteGuard(app, () => deps.diskSpace.assertWritable());

  const userReply = toOperatorUserReply;

  app.get(
    `${PREFIX}/users`,
    { schema: { hide: true, querystring: ListUsersQuery, response: { 200: ListUsersReply } } },
    async (req) => {
      const { email, limit, offset } = req.query;
      const page = await deps.operator.listUsers({ email: email ?? null, limit, offset });
      return { users: page.users.map(userReply), total: page.total, limit, offset };
    },
  );

  app.get(
    `${PREFIX}/users/:id`,
    { schema: { hide: true, params: OperatorUserParams, response: { 200: OperatorUserSchema } } },
    async (req) => userReply(await deps.operator.findUser({ id: req.params.id })),
  );

  app.post(
    `${PREFIX}/users/:id/deactivate`,
    { schema: { hide: true, params: OperatorUserParams, response: { 200: DeactivateUserReply } } },
    async (req) => {
      const r = await deps.operator.deactivateUser(req.params.id);
      return { user: userReply(r.user), deactivated_key_ids: r.deactivatedKeyIds };
    },
  );

  app.post(
    `${PREFIX}/users/:id/grants`,
    {
      schema: {
        hide: true,
        params: OperatorUserParams,
        body: OperatorGrantBody,
        response: { 201: ref(CreditTransactionSchema) },
      },
    },
    async (req, reply) => {
      const reason = req.body.reason.trim();
      if (!reason)
        throw validationError("Request validation failed", [
          { field: "reason", reason: "must not be blank" },
        ]);
      const t = await deps.operator.grant(req.params.id, req.body.amount, reason);
      return reply.status(201).send(toTransactionReply(t));
    },
  );

  app.get(
    `${PREFIX}/users/:id/api-keys`,
    { schema: { hide: true, params: OperatorUserParams, response: { 200: OperatorKeysReply } } },
    async (req) => ({ api_keys: (await deps.operator.listKeys(req.params.id)).map(toApiKeyListItem) }),
  );

  app.delete(
    `${PREFIX}/users/:id/api-keys/:keyId`,
    { schema: { hide: true, params: OperatorKeyParams } },
    async (req, reply) => {
      await deps.operator.revokeKey(req.params.id, req.params.keyId);
      return reply.status(204).send();
    },
  );

  app.get(`${PREFIX}/queue`, { schema: { hide: true, response: { 200: QueueHealthReply } } }, async () =>
    toQueueHealthReply(await deps.operator.queueHealth()),
  );
};
