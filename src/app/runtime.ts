import type { Config } from "../config/index.ts";
import type { Database } from "../db/client.ts";
import { lockDataDir } from "../db/data-dir-lock.ts";
import { migrate } from "../db/migrate.ts";
import { hasAnyUser } from "../db/queries/users.ts";
import { openDatabase } from "../db/open.ts";
import { createDiskSpaceGuard, type DiskSpaceGuard } from "../observability/disk-space.ts";
import type { Logger } from "../observability/logger.ts";
import type { RateLimitStore } from "../ratelimit/limiter.ts";
import { loadLocalSecrets } from "./local-secrets.ts";
import { buildServices, type Services } from "./services.ts";
import { sealClearWebhookSecrets } from "../webhooks/secret-cipher.ts";

export interface Runtime {
  services: Services;
  /** True when the database had no user before this start (fresh install). */
  isFresh: boolean;
  close(): Promise<void>;
}

/**
 * Opens the database for this process, applies migrations, resolves secrets and builds the
 * services. Embedded mode locks DATA_DIR first so no second process can open the same PGlite.
 */
export async function openRuntime(config: Readonly<Config>, logger: Logger): Promise<Runtime> {
  const embedded = config.databaseUrl === null;
  const releaseLock = embedded ? await lockDataDir(await ensureDir(config.dataDir)) : null;
  let db: Database | null = null;
  const closers: Array<() => Promise<void>> = [];
  try {
    db = await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      poolSize: config.databasePoolSize,
      onPoolError: (err) => logger.warn({ err }, "idle database connection failed"),
      onDataDirOpened: (p) =>
        logger.warn(
          {
            madePrivate: p.fixed.length,
            notOurs: p.refused.slice(0, 10),
            truncated: p.truncated,
          },
          "DATA_DIR had files other accounts could read or write: made them the owner's only (0700/0600)",
        ),
    });
    const applied = await migrate(db);
    if (applied.length > 0) logger.info({ versions: applied }, "applied database migrations");

    let encryptionKey = config.encryptionKey;
    let jwtSecret = config.jwtSecret;
    if (embedded) {
      const local = await loadLocalSecrets(config.dataDir);
      encryptionKey ??= local.encryptionKey;
      jwtSecret ??= local.jwtSecret;
      if (local.generatedEncryptionKey && !config.encryptionKey) {
        logger.warn(
          { file: `${config.dataDir}/encryption.key` },
          "generated an API-key encryption key in DATA_DIR; back it up with the data, or set ENCRYPTION_KEY",
        );
      }
    }

    const rateLimitStore = await rateLimitStoreFor(config, db, closers);
    // On PostgreSQL the data directory is the database server's, watched by its operator; this
    // process writes nothing of its own to disk there, so there is nothing to guard.
    const diskSpace = embedded ? await startDiskSpaceGuard(config, logger) : undefined;
    const services = buildServices({
      config,
      db,
      logger,
      encryptionKey,
      jwtSecret,
      rateLimitStore,
      diskSpace,
    });
    const sealed = await sealClearWebhookSecrets(db, services.webhookSecrets);
    if (sealed > 0) logger.info({ users: sealed }, "encrypted webhook signing secrets stored in the clear");
    else if (!services.webhookSecrets.sealing)
      logger.warn("ENCRYPTION_KEY is not set: webhook signing secrets are stored in the clear");
    const isFresh = !(await hasAnyUser(db));
    const openedDb = db;
    return {
      services,
      isFresh,
      async close() {
        await services.close().catch(() => {});
        for (const close of closers) await close().catch(() => {});
        await openedDb.close();
        await releaseLock?.();
      },
    };
  } catch (e) {
    await db?.close().catch(() => {});
    await releaseLock?.();
    throw e;
  }
}

async function startDiskSpaceGuard(config: Readonly<Config>, logger: Logger): Promise<DiskSpaceGuard> {
  const log = logger.child({ dataDir: config.dataDir, minFreeMb: config.dataDirMinFreeMb });
  const guard = createDiskSpaceGuard({
    dir: config.dataDir,
    minFreeMb: config.dataDirMinFreeMb,
    onChange(e) {
      if (e.kind === "unreadable")
        log.warn({ err: e.error }, "cannot read the free space of DATA_DIR; the free-space guard is off");
      else if (e.kind === "low")
        log.warn(
          { freeMb: Math.floor((e.status.freeBytes ?? 0) / 1024 / 1024) },
          "DATA_DIR is below DATA_DIR_MIN_FREE_MB: refusing work that writes (503) and pausing the workers",
        );
      else log.info("DATA_DIR has DATA_DIR_MIN_FREE_MB free again: taking work");
    },
  });
  await guard.start();
  return guard;
}

/** DATA_DIR, created its owner's only when missing (openDatabase makes what it holds private). */
async function ensureDir(dir: string): Promise<string> {
  const { mkdir } = await import("node:fs/promises");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return dir;
}

async function rateLimitStoreFor(
  config: Readonly<Config>,
  db: Database,
  closers: Array<() => Promise<void>>,
): Promise<RateLimitStore> {
  if (config.redisUrl) {
    const { Redis } = await import("ioredis");
    const client = new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    closers.push(async () => void client.disconnect());
    return { kind: "redis", client };
  }
  if (db.kind === "postgres" && "pool" in db) return { kind: "postgres", pool: db.pool };
  return { kind: "memory" };
}
