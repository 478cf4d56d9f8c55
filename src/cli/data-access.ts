import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config/index.ts";
import { findAdminEndpoint, type AdminEndpoint } from "../app/admin-endpoint.ts";
import { openRuntime } from "../app/runtime.ts";
import { dataDirOwner } from "../db/data-dir-lock.ts";
import { sleep } from "../lib/sleep.ts";
import { CliError } from "./cli-support.ts";
import type { ApiKeyPurpose, ApiKeyRecord } from "../keys/service.ts";
import type { Logger } from "../observability/logger.ts";
import { toOperatorUserJson, type OperatorUserJson } from "../users/operator.ts";

/** What the data commands need, wherever the data lives. */
export interface DataAccess {
  createUser(
    credits: number,
    email: string | null,
  ): Promise<{ userId: string; balance: number; apiKey: string }>;
  grantCredits(
    userId: string,
    amount: number,
    reason: string,
  ): Promise<{ transactionId: string; balanceAfter: number }>;
  createKey(userId: string, name: string, purpose: ApiKeyPurpose): Promise<CliCreatedKey>;
  listKeys(userId: string): Promise<CliApiKey[]>;
  revokeKey(userId: string, keyId: string): Promise<void>;
  listUsers(page: UsersPage): Promise<{ users: OperatorUserJson[]; total: number }>;
  /** By id or exact email; a CliError when there is none. */
  findUser(by: { id: string } | { email: string }): Promise<OperatorUserJson>;
  deactivateUser(id: string): Promise<{ user: OperatorUserJson; deactivated_key_ids: string[] }>;
  /** A one-time sign-in link tied to `apiKeyId`, or to the user's newest custom key when null. */
  createSignInLink(userId: string, apiKeyId: string | null): Promise<CliSignInLink>;
  close(): Promise<void>;
}

/** A page of `mailprobe users list`: `email` matches part of the address. */
export interface UsersPage {
  email: string | null;
  limit: number;
  offset: number;
}

/** An API key as the `keys` commands print it (the API's listing fields). */
export interface CliApiKey {
  id: string;
  name: string;
  purpose: string;
  is_active: boolean;
  created_at: string;
  last_used_at: string | null;
  prefix: string;
}

/** A minted sign-in link: its token shown once (the command builds the address). */
export interface CliSignInLink {
  token: string;
  user_id: string;
  api_key_id: string;
  expires_at: string;
}

/** A created key: shown once, with its plaintext. */
export type CliCreatedKey = Pick<CliApiKey, "id" | "name" | "purpose" | "created_at"> & { key: string };

const cliKeyOf = (r: ApiKeyRecord): CliApiKey => ({
  id: r.id,
  name: r.name,
  purpose: r.purpose,
  is_active: r.isActive,
  created_at: r.createdAt.toISOString(),
  last_used_at: r.lastUsedAt?.toISOString() ?? null,
  prefix: r.keyPrefix,
});

async function adminCall<T>(endpoint: AdminEndpoint, path: string, body: unknown): Promise<T> {
  const res = await fetch(endpoint.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-admin-token": endpoint.token },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const json = (text ? JSON.parse(text) : {}) as T & {
    error?: { message: string; details?: Array<{ field: string; reason: string }> };
  };
  if (!res.ok) {
    const details = json.error?.details?.map((d) => `${d.field} ${d.reason}`).join("; ");
    throw new CliError(
      `${json.error?.message ?? `server answered ${res.status}`}${details ? ` (${details})` : ""}`,
    );
  }
  return json;
}

function viaAdminApi(endpoint: AdminEndpoint): DataAccess {
  return {
    async createUser(credits, email) {
      const r = await adminCall<{ user_id: string; balance: number; api_key: string }>(
        endpoint,
        "/admin/v1/users",
        { credits, email },
      );
      return { userId: r.user_id, balance: r.balance, apiKey: r.api_key };
    },
    async grantCredits(userId, amount, reason) {
      const r = await adminCall<{ transaction_id: string; balance_after: number }>(
        endpoint,
        "/admin/v1/credits/grant",
        {
          user_id: userId,
          amount,
          reason,
        },
      );
      return { transactionId: r.transaction_id, balanceAfter: r.balance_after };
    },
    async createKey(userId, name, purpose) {
      const r = await adminCall<CliCreatedKey>(endpoint, "/admin/v1/api-keys", {
        user_id: userId,
        name,
        purpose,
      });
      return { id: r.id, name: r.name, purpose: r.purpose, created_at: r.created_at, key: r.key };
    },
    async listKeys(userId) {
      return (
        await adminCall<{ api_keys: CliApiKey[] }>(endpoint, "/admin/v1/api-keys/list", { user_id: userId })
      ).api_keys;
    },
    async revokeKey(userId, keyId) {
      await adminCall(endpoint, "/admin/v1/api-keys/revoke", { user_id: userId, id: keyId });
    },
    listUsers: (page) =>
      adminCall<{ users: OperatorUserJson[]; total: number }>(endpoint, "/admin/v1/users/list", page),
    findUser: (by) => adminCall<OperatorUserJson>(endpoint, "/admin/v1/users/show", by),
    deactivateUser: (id) =>
      adminCall<{ user: OperatorUserJson; deactivated_key_ids: string[] }>(
        endpoint,
        "/admin/v1/users/deactivate",
        { id },
      ),
    createSignInLink: (id, apiKeyId) =>
      adminCall<CliSignInLink>(endpoint, "/admin/v1/users/sign-in-link", { id, api_key_id: apiKeyId }),
    async close() {},
  };
}

async function direct(config: Readonly<Config>, logger: Logger): Promise<DataAccess> {
  const runtime = await openRuntime(config, logger);
  const { users, credits, apiKeys, operator, signInLinks } = runtime.services;
  return {
    async createUser(amount, email) {
      const created = await users.create({ credits: amount, email });
      return { userId: created.user.id, balance: created.user.balance, apiKey: created.apiKey.plaintext };
    },
    async grantCredits(userId, amount, reason) {
      const t = await credits.grant(userId, amount, reason);
      return { transactionId: t.id, balanceAfter: t.balanceAfter };
    },
    async createKey(userId, name, purpose) {
      const { record, plaintext } = await apiKeys.create(userId, name, purpose);
      const { id, purpose: p, created_at } = cliKeyOf(record);
      return { id, name: record.name, purpose: p, created_at, key: plaintext };
    },
    async listKeys(userId) {
      return (await apiKeys.list(userId, false)).map((k) => cliKeyOf(k.record));
    },
    revokeKey: (userId, keyId) => apiKeys.deactivate(userId, keyId),
    async listUsers(page) {
      const r = await operator.listUsers(page);
      return { users: r.users.map(toOperatorUserJson), total: r.total };
    },
    findUser: async (by) => toOperatorUserJson(await operator.findUser(by)),
    async deactivateUser(id) {
      const r = await operator.deactivateUser(id);
      return { user: toOperatorUserJson(r.user), deactivated_key_ids: r.deactivatedKeyIds };
    },
    async createSignInLink(userId, apiKeyId) {
      const link = await signInLinks.mint(userId, apiKeyId);
      return {
        token: link.token,
        user_id: link.userId,
        api_key_id: link.apiKeyId,
        expires_at: link.expiresAt.toISOString(),
      };
    },
    close: () => runtime.close(),
  };
}

/**
 * A data command run without the server's DATA_DIR used to create a second, empty database
 * silently (and the user it created was invisible to the server). The embedded database lives in
 * DATA_DIR/pgdata (db/open.ts).
 */
function warnIfNewDatabase(dataDir: string, warn: (line: string) => void): void {
  if (existsSync(join(dataDir, "pgdata"))) return;
  warn(
    `${dataDir} holds no database; creating a new one there. ` +
      "If a server runs with another DATA_DIR, set DATA_DIR to its directory to use its data.",
  );
}

/**
 * PostgreSQL: open it directly (any number of processes may). Embedded: if a server owns the
 * data directory, go through its admin API (waiting briefly for a server that is still starting);
 * otherwise open the directory ourselves.
 */
export async function openDataAccess(
  config: Readonly<Config>,
  logger: Logger,
  warn: (line: string) => void = (line) => void process.stderr.write(`mailprobe: warning: ${line}\n`),
): Promise<DataAccess> {
  if (config.databaseUrl) return direct(config, logger);
  const endpoint = await serverOwning(config.dataDir);
  if (endpoint) return viaAdminApi(endpoint);
  warnIfNewDatabase(config.dataDir, warn);
  return direct(config, logger);
}

/**
 * The admin API of the server that owns an embedded data directory, or null when no process
 * holds it (the caller may open it). Waits up to a minute for a server that is still starting.
 */
export async function serverOwning(dataDir: string): Promise<AdminEndpoint | null> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const endpoint = await findAdminEndpoint(dataDir);
    if (endpoint) return endpoint;
    const owner = await dataDirOwner(dataDir);
    if (owner === null) return null;
    if (Date.now() > deadline)
      throw new CliError(`process ${owner} holds ${dataDir} but exposes no admin API`);
    await sleep(250);
  }
}
