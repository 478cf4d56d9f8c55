import type { Services } from "./services.ts";
import { createPgHostGate } from "../politeness/host-gate.ts";
import { taskGroupRecorder } from "../tasks/group-recorder.ts";
import { createWorkerPool, newWorkerId, type WorkerPool } from "../jobs/runner.ts";
import { createRetentionSweeper, type RetentionSweeper } from "../tasks/retention.ts";
import { createEngine } from "../verify/index.ts";
import { createWebhookDispatcher, type WebhookDispatcher } from "../webhooks/dispatcher.ts";
import { engineOptionsFrom, gateEgressFrom, guardPorts, paceFrom } from "./engine-options.ts";

export interface WorkerRole {
  pool: WorkerPool;
  webhooks: WebhookDispatcher;
  /** RESULT_RETENTION_DAYS: purges old task data on a timer (idle when unset). */
  retention: RetentionSweeper;
  start(): void;
  stop(deadlineMs: number): Promise<void>;
}

/**
 * The batch side of a process: the verification worker pool (with its own engine, whose host
 * gate enforces the cluster-wide per-MX-host limit) and the webhook dispatcher.
 */
export function createWorkerRole(
  services: Services,
  opts: { workerId?: string; recordRetryDelaysMs?: readonly number[] } = {},
): WorkerRole {
  const { config, db, clock, logger } = services;
  // The background must not write into a full disk: nothing new is claimed below the threshold.
  const diskPause = (): string | null => services.diskSpace.refusal();
  const workerId = opts.workerId ?? newWorkerId();
  const gate = createPgHostGate({
    db,
    clock,
    holder: workerId,
    slotsPerHost: config.verify.maxSessionsPerHost,
    leaseMs: config.worker.leaseMs,
    // Only another process can hold the slot we wait for (local contenders are refused at
    // once), so a short wait usually ends with the slot; past it, the group is requeued.
    maxWaitMs: 5_000,
    // Every identity resting for a provider: its groups go back to the queue, unbilled.
    ...gateEgressFrom(config.verify),
    whenAllResting: "defer",
  });
  const engine = createEngine(engineOptionsFrom(config.verify), {
    clock,
    hostGate: gate,
    idleConnections: services.idleConnections,
    // No room under a provider's pace: the group goes back to the queue until there is.
    pace: paceFrom(services, "defer"),
    ...guardPorts,
  });
  const pool = createWorkerPool({
    db,
    clock,
    logger,
    engine,
    gate,
    config: config.worker,
    recorder: taskGroupRecorder,
    workerId,
    recordRetryDelaysMs: opts.recordRetryDelaysMs,
    claimPause: diskPause,
  });
  const webhooks = createWebhookDispatcher({
    db,
    clock,
    logger,
    config: config.webhooks,
    secrets: services.webhookSecrets,
    claimPause: diskPause,
  });
  const retention = createRetentionSweeper({
    db,
    clock,
    logger,
    retentionDays: config.resultRetentionDays,
    pause: diskPause,
  });
  return {
    pool,
    webhooks,
    retention,
    start() {
      pool.start();
      webhooks.start();
      retention.start();
    },
    async stop(deadlineMs) {
      await retention.stop();
      await pool.stop(deadlineMs);
      await webhooks.stop();
      await engine.close();
    },
  };
}
