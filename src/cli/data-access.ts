import type { Config } from "../config/index.ts";
import { findAdminEndpoint, type AdminEndpoint } from "../app/admin-endpoint.ts";
import { openRuntime } from "../app/runtime.ts";
import { dataDirOwner } from "../db/data-dir-lock.ts";
import { sleep } from "../lib/sleep.ts";
import type { Logger } from "../observability/logger.ts";

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
  close(): Promise<void>;
}

export class CliError extends Error {
  override name = "CliError";
}

async function adminCall<T>(endpoint: AdminEndpoint, path: string, body: unknown): Promise<T> {
  const res = await fetch(endpoint.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-admin-token": endpoint.token },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as T & {
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
    async close() {},
  };
}

async function direct(config: Readonly<Config>, logger: Logger): Promise<DataAccess> {
  const runtime = await openRuntime(config, logger);
  const { users, credits } = runtime.services;
  return {
    async createUser(amount, email) {
      const created = await users.create({ credits: amount, email });
      return { userId: created.user.id, balance: created.user.balance, apiKey: created.apiKey.plaintext };
    },
    async grantCredits(userId, amount, reason) {
      const t = await credits.grant(userId, amount, reason);
      return { transactionId: t.id, balanceAfter: t.balanceAfter };
    },
    close: () => runtime.close(),
  };
}

/**
 * PostgreSQL: open it directly (any number of processes may). Embedded: if a server owns the
 * data directory, go through its admin API (waiting briefly for a server that is still starting);
 * otherwise open the directory ourselves.
 */
export async function openDataAccess(config: Readonly<Config>, logger: Logger): Promise<DataAccess> {
  if (config.databaseUrl) return direct(config, logger);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const endpoint = await findAdminEndpoint(config.dataDir);
    if (endpoint) return viaAdminApi(endpoint);
    const owner = await dataDirOwner(config.dataDir);
    if (owner === null) return direct(config, logger);
    if (Date.now() > deadline)
      throw new CliError(`process ${owner} holds ${config.dataDir} but exposes no admin API`);
    await sleep(250);
  }
}
