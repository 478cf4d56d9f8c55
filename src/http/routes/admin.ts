import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AppError } from "../../lib/app-error.ts";
import { safeEqual } from "../../lib/tokens.ts";
import type { HttpDeps } from "../deps.ts";
import { adminUserRoutes } from "./admin-users.ts";
import { installWriteGuard } from "../plugins/write-guard.ts";
import { CreatedApiKeyReply, toApiKeyListItem, toCreatedApiKeyReply } from "../schemas/api-keys.ts";
import { ref } from "../schemas/common.ts";
import {
  AdminCreateKeyBody,
  AdminListKeysReply,
  AdminRevokeKeyBody,
  AdminUserKeysBody,
  CreatedUserReply,
  CreateUserBody,
  GrantCreditsBody,
  GrantCreditsReply,
  toCreatedUserReply,
  toGrantCreditsReply,
} from "../schemas/admin.ts";

/** The handler sends the bytes itself: this only documents the media type. */
const DatabaseSnapshotReply = {
  description: "A tar of the embedded database's data directory, streamed: an online base backup",
  content: { "application/x-tar": { schema: { type: "string", format: "binary" } } },
};

const LOOPBACK = new Set(["127.0.0.1", "::1", "::ffff:127.0.0.1"]);

/**
 * The local admin API the CLI uses while `serve` owns an embedded data directory (PGlite allows
 * one process). Reachable only from this machine, with the token the server wrote to DATA_DIR.
 */
export const adminRoutes: FastifyPluginAsyncTypebox<{ deps: HttpDeps; token: string }> = async (
  app,
  { deps, token },
) => {
  app.addHook("onRequest", async (req) => {
    const given = req.headers["x-admin-token"];
    if (
      !LOOPBACK.has(req.socket.remoteAddress ?? "") ||
      typeof given !== "string" ||
      !safeEqual(given, token)
    ) {
      throw new AppError("UNAUTHORIZED", "Admin token required");
    }
  });
  installWriteGuard(app, () => deps.diskSpace.assertWritable());
  await app.register(adminUserRoutes, { deps });

  app.post(
    "/admin/v1/users",
    { schema: { hide: true, body: CreateUserBody, response: { 201: CreatedUserReply } } },
    async (req, reply) => {
      const created = await deps.users.create({ email: req.body.email, credits: req.body.credits });
      return reply.status(201).send(toCreatedUserReply(created));
    },
  );

  app.post(
    "/admin/v1/credits/grant",
    { schema: { hide: true, body: GrantCreditsBody, response: { 201: GrantCreditsReply } } },
    async (req, reply) => {
      const t = await deps.credits.grant(req.body.user_id, req.body.amount, req.body.reason);
      return reply.status(201).send(toGrantCreditsReply(t));
    },
  );

  app.post(
    "/admin/v1/api-keys",
    { schema: { hide: true, body: AdminCreateKeyBody, response: { 201: ref(CreatedApiKeyReply) } } },
    async (req, reply) => {
      const created = await deps.apiKeys.create(req.body.user_id, req.body.name.trim(), req.body.purpose);
      return reply.status(201).send(toCreatedApiKeyReply(created));
    },
  );

  app.post(
    "/admin/v1/api-keys/list",
    {
      schema: { hide: true, body: AdminUserKeysBody, response: { 200: ref(AdminListKeysReply) } },
      config: { writesNothing: true },
    },
    async (req) => ({ api_keys: (await deps.apiKeys.list(req.body.user_id, false)).map(toApiKeyListItem) }),
  );

  app.post(
    "/admin/v1/api-keys/revoke",
    { schema: { hide: true, body: AdminRevokeKeyBody } },
    async (req, reply) => {
      await deps.apiKeys.deactivate(req.body.user_id, req.body.id);
      return reply.status(204).send();
    },
  );

  // `mailprobe backup` while this process owns the embedded database: only the owner can run
  // the backup's start and stop (pglite-online-backup.ts). The tar streams as it is read from
  // disk; the CLI zips it and adds the secrets files itself.
  app.post(
    "/admin/v1/backup",
    { schema: { hide: true, response: { 200: DatabaseSnapshotReply } }, config: { writesNothing: true } },
    async (_req, reply) => {
      if (!deps.databaseBackups) throw new AppError("NOT_FOUND", "No embedded database to back up");
      return reply.type("application/x-tar").send(await deps.databaseBackups.start());
    },
  );
  // A backup in flight would hold the shutdown until its deadline: it ends first, so the
  // database closes with no backup running and the slot dropped.
  app.addHook("preClose", async () => deps.databaseBackups?.abort());
};
