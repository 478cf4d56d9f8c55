import type { Database, Transaction } from "../db/client.ts";
import { claimCandidate, claimDomainJobs } from "../db/queries/claims.ts";
import { dropJobsOfCancelledTasks, type JobRecord } from "../db/queries/jobs.ts";
import { markTasksStarted } from "../db/queries/tasks.ts";
import { budgetOf } from "../verify/index.ts";

/** Most jobs one claim takes: one SMTP session runs them in transactions of SMTP_MAX_RCPT. */
export const CLAIM_GROUP_MAX = 200;

/**
 * Reads of the fair order per claim. Each read names the best domain due now; when another
 * worker is claiming that one at this moment, the next read (with it skipped) names the next in
 * the same order, often the same task's next domain, so a concurrent claimer stays in the fair
 * order instead of falling through to a task further down. A few reads cover a burst of claimers.
 */
const READS_PER_CLAIM = 4;

export interface ClaimRequest {
  worker: string;
  now: Date;
  leaseUntil: Date;
  /** Most jobs in the group (default CLAIM_GROUP_MAX). */
  max?: number;
  /** Slots of one server IP over every egress identity (SMTP_MAX_CONNECTIONS_PER_HOST × identities). */
  slotsPerHost?: number;
  /** MAX_SESSIONS_PER_USER (0: no cap). */
  maxSessionsPerUser?: number;
  /** Egress identities (SMTP_EGRESS; default 1). */
  egressCount?: number;
  /** Domains whose host this process already works at its limit. */
  skipDomains?: readonly string[];
  /** Domains of hosts where this process just freed a slot. */
  preferDomains?: readonly string[];
  /** Server IPs where this process holds an idle connection. */
  idleHosts?: readonly string[];
}

/**
 * Claims the next group in the fair order (docs/scheduling.md): the best due domain whose server
 * has a free slot, and its due jobs. One transaction: if marking the tasks started fails, the
 * claim is undone too, so no job is left leased to a group that never runs. It locks jobs before
 * tasks, against the global order (docs/locking.md), safely: SKIP LOCKED never waits for a job,
 * and the only tasks it waits for are ones not started yet, whose lockers (a cancel) wait for no
 * pending job. Returns no job when nothing is due on a server with room.
 */
export async function claimNextGroup(db: Database, r: ClaimRequest): Promise<JobRecord[]> {
  return db.transaction(async (tx) => {
    const skipped = [...(r.skipDomains ?? [])];
    for (let read = 0; read < READS_PER_CLAIM; read++) {
      const best = await claimCandidate(tx, {
        now: r.now,
        skipDomains: skipped,
        preferDomains: r.preferDomains ?? [],
        idleHosts: r.idleHosts ?? [],
        slotsPerHost: r.slotsPerHost ?? Number.MAX_SAFE_INTEGER,
        maxSessionsPerUser: r.maxSessionsPerUser ?? 0,
        egressCount: r.egressCount ?? 1,
      });
      if (best === null) return [];
      const max = r.max ?? CLAIM_GROUP_MAX;
      const claimed = await claimDomainJobs(tx, {
        worker: r.worker,
        now: r.now,
        leaseUntil: r.leaseUntil,
        // A paced provider answers at most its budget per window: a bigger group would hand most
        // of its jobs back unasked (docs/pacing.md).
        max: best.pacedRcpts === null ? max : Math.min(max, budgetOf(best.pacedRcpts)),
        domain: best.domain,
        claimLane: best.claimLane,
      });
      if (claimed.length > 0) return startClaimed(tx, claimed, r.now);
      // Another worker is claiming it right now, or just did.
      skipped.push(best.domain);
    }
    return [];
  });
}

/**
 * Marks the claimed jobs' tasks started, and drops the jobs of a cancelled task: one a lease sweep
 * or a lost write put back after the cancel, or one taken while a cancel of its task was
 * committing, when the update had to wait for that cancel's task lock. A claim that committed
 * first is in flight: it finishes and is billed like any group running at the cancel.
 */
async function startClaimed(tx: Transaction, claimed: JobRecord[], now: Date): Promise<JobRecord[]> {
  await markTasksStarted(tx, [...new Set(claimed.map((j) => j.taskId))], now);
  const dropped = await dropJobsOfCancelledTasks(
    tx,
    claimed.map((j) => j.id),
    now,
  );
  return dropped.size > 0 ? claimed.filter((j) => !dropped.has(j.id)) : claimed;
}
