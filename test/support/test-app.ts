import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app/build-app.ts";
import { buildServices, type Services } from "../../src/app/services.ts";
import { loadConfig, type Config } from "../../src/config/index.ts";
import type { Database } from "../../src/db/client.ts";
import { ManualClock, systemClock, type Clock } from "../../src/lib/clock.ts";
import { createLogger } from "../../src/observability/logger.ts";
import type { RateLimitStore } from "../../src/ratelimit/limiter.ts";
import { openTestDatabase } from "./test-db.ts";

export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7);
export const TEST_JWT_SECRET = "test-secret-test-secret-test-secret-0123";

export interface TestContextOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** null simulates cluster mode without ENCRYPTION_KEY. */
  encryptionKey?: Buffer | null;
  jwtSecret?: string | null;
  rateLimitStore?: RateLimitStore;
  /** Reuse a database opened by another context of the same file. */
  db?: Database;
  adminToken?: string;
  enginePorts?: Partial<import("../../src/verify/index.ts").EnginePorts>;
  /** A started DATA_DIR guard (e.g. with an injected statfs source); default: none. */
  diskSpace?: import("../../src/observability/disk-space.ts").DiskSpaceGuard;
}

export interface TestUser {
  userId: string;
  apiKey: string;
  apiKeyId: string;
}

export interface TestContext {
  app: FastifyInstance;
  services: Services;
  db: Database;
  config: Readonly<Config>;
  createUser(credits?: number): Promise<TestUser>;
  /** Authorization header for a key or JWT. */
  bearer(token: string): { authorization: string };
  /** POST /api/v1/tasks as `user` with `{ emails, ...extra }`; fails unless 201; the task id. */
  createTask(user: TestUser, emails: string[], extra?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/** The real app on the real test database, built in-process (inject(), no port). */
export async function createTestContext(opts: TestContextOptions = {}): Promise<TestContext> {
  const ownsDb = !opts.db;
  const db = opts.db ?? (await openTestDatabase());
  const config = loadConfig({
    LOG_LEVEL: "silent",
    DATA_DIR: "/nonexistent-in-tests",
    // High enough that only the rate-limit tests ever see a 429.
    RATE_LIMIT_PER_SECOND: "100000",
    RATE_LIMIT_BURST: "100000",
    ...opts.env,
  });
  const services = buildServices({
    config,
    db,
    logger: createLogger(config.logLevel),
    clock: opts.clock ?? systemClock,
    encryptionKey: opts.encryptionKey === undefined ? TEST_ENCRYPTION_KEY : opts.encryptionKey,
    jwtSecret: opts.jwtSecret === undefined ? TEST_JWT_SECRET : opts.jwtSecret,
    rateLimitStore: opts.rateLimitStore,
    enginePorts: opts.enginePorts,
    diskSpace: opts.diskSpace,
    processMetrics: false,
  });
  const app = await buildApp(services, { adminToken: opts.adminToken ?? null });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  return {
    app,
    services,
    db,
    config,
    async createUser(credits = 0) {
      const created = await services.users.create({ email: null, credits });
      return { userId: created.user.id, apiKey: created.apiKey.plaintext, apiKeyId: created.apiKey.id };
    },
    bearer,
    async createTask(user, emails, extra = {}) {
      const res = await app.inject({
        method: "POST",
        url: "/api/v1/tasks",
        headers: bearer(user.apiKey),
        payload: { emails, ...extra },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ id: string }>().id;
    },
    async close() {
      await app.close();
      await services.close();
      if (ownsDb) await db.close();
    },
  };
}

export { ManualClock };
