import type { Queryable } from "../client.ts";
import { CLAIM_LANE, toJob, type JobRecord, type JobRow } from "./jobs.ts";

// The claim, in two steps (docs/scheduling.md): which domain next, fairly between users and
// tasks and only where its server IP has a free slot; then that domain's due jobs.

/** The advisory-lock class of claim turns (the other key is the domain's hash). */
const CLAIM_TURN_CLASS = 7311;

/**
 * A domain's claim turn, tried as the last condition of a candidate probe: a domain another
 * claimer is taking at this moment is passed over within the same read, so concurrent claimers
 * spread over the next domains instead of all naming the first and reading again. The lock is
 * the claim transaction's until it commits; a probe that takes the turn of a domain the final
 * order does not pick only keeps other claimers off it for those milliseconds. Re-taking it in
 * claimDomainJobs is a no-op: advisory locks are re-entrant within a session.
 */
const TAKE_DOMAIN_TURN = `pg_try_advisory_xact_lock(${CLAIM_TURN_CLASS.toString()}, hashtext(j.domain))`;

/**
 * The best due job of open task `o` (email_jobs_task_claim_idx: lane, then run_after) that also
 * meets `where`: not a domain the caller skips ($2), not on a blocked server (`blocked_hosts`: busy,
 * or of a provider whose pace has no room), and whose claim turn this transaction takes.
 * `preferred` ranks it among equals.
 */
const taskProbe = (preferred: 0 | 1, where: string): string =>
  `(select j.domain, j.claim_lane, j.run_after, ${preferred.toString()} as preferred
      from email_jobs j
     where ${where}
       and j.task_id = o.id and j.status = 'pending' and j.run_after <= $1
       and not (j.domain = any($2::text[]))
       and not exists (select 1 from mail_domain_hosts h join blocked_hosts b on b.host = h.host
                        where h.domain = j.domain)
       and ${TAKE_DOMAIN_TURN}
     order by j.claim_lane, j.run_after
     limit 1)`;

/** A domain a claim may take next, with what ranked it there. */
export interface ClaimCandidate {
  taskId: string;
  domain: string;
  claimLane: number;
  /** The RCPTs the pace of the domain's provider accepted per window (per identity); null: not paced. */
  pacedRcpts: number | null;
}

export interface CandidateQuery {
  now: Date;
  /** Domains this process knows it cannot serve now (its own sessions fill their host). */
  skipDomains: readonly string[];
  /** Domains of server IPs where this process just freed a slot: first among equals. */
  preferDomains: readonly string[];
  /** Server IPs where this process holds an idle connection: not busy to it, whatever the table says. */
  idleHosts: readonly string[];
  /** Slots of one server IP over every egress identity: held this many times, it is busy. */
  slotsPerHost: number;
  /** MAX_SESSIONS_PER_USER: a user running this many groups gets no more (0: no cap). */
  maxSessionsPerUser: number;
  /** Egress identities: a provider whose pace has no room for this many of them is skipped. */
  egressCount: number;
}

/**
 * The best due domain to claim (null: none), in the fair order: the user running the fewest groups
 * cluster-wide first; inside a user, the claim lane (due retries, then first chunks, then bulk),
 * then a domain of a host this process just freed, then the task running the fewest groups, then
 * the oldest due job, then the older task. "Running" is counted from the jobs in `processing`
 * under a live lease, by worker and domain (one group each), so a dead worker's groups stop
 * counting when their lease runs out and no second table has to be kept in step.
 *
 * Each open task is probed for its best due job (email_jobs_task_claim_idx), skipping domains
 * whose server IP (mail_domain_hosts) has every slot held (smtp_host_slots) or a realtime request
 * waiting for a slot (smtp_host_waits), or whose provider's pace has no room for any identity
 * (provider_paces.room_at, docs/pacing.md): a claim never lands on a saturated server, so W workers
 * spread over the due domains instead of queueing on the first. A server where this process holds
 * an idle connection is not saturated to it (the connection serves the next domain), unless a
 * realtime request waits there.
 */
export async function claimCandidate(q: Queryable, c: CandidateQuery): Promise<ClaimCandidate | null> {
  const { rows } = await q.query<{
    task_id: string;
    domain: string;
    claim_lane: number;
    paced_rcpts: number | null;
  }>(
    `with running as (
       select user_id, task_id, count(distinct (locked_by, domain))::int as groups
         from email_jobs
        where status = 'processing' and locked_until >= $1
        group by user_id, task_id
     ), user_running as (
       select user_id, sum(groups)::int as groups from running group by user_id
     ), busy_hosts as (
       select host from smtp_host_slots
        where holder is not null and expires_at >= $1 and not (host = any($4::text[]))
        group by host
       having count(*) >= $5
       union
       select host from smtp_host_waits where until >= $1
     ), paced_out as (
       select provider from provider_paces where room_at > $1 and forget_at > $1
        group by provider
       having count(*) >= $7
     ), blocked_hosts as (
       select host from busy_hosts
       union
       select h.host from mail_domain_hosts h where h.provider in (select provider from paced_out)
     ), open_tasks as (
       select t.id, t.created_at, coalesce(u.groups, 0) as user_groups, coalesce(r.groups, 0) as task_groups
         from tasks t
         left join user_running u on u.user_id = t.user_id
         left join running r on r.task_id = t.id
        where t.finished_at is null and ($6::int = 0 or coalesce(u.groups, 0) < $6)
     )
     select o.id as task_id, c.domain, c.claim_lane,
            (select min(p.max_rcpts) from mail_domain_hosts h join provider_paces p on p.provider = h.provider
              where h.domain = c.domain and p.forget_at > $1) as paced_rcpts
       from open_tasks o
       cross join lateral (
         ${taskProbe(1, "cardinality($3::text[]) > 0 and j.domain = any($3::text[])")}
         union all
         ${taskProbe(0, "true")}
       ) c
      order by o.user_groups, c.claim_lane, c.preferred desc, o.task_groups, c.run_after, o.created_at
      limit 1`,
    [c.now, c.skipDomains, c.preferDomains, c.idleHosts, c.slotsPerHost, c.maxSessionsPerUser, c.egressCount],
  );
  const best = rows[0];
  return best === undefined
    ? null
    : { taskId: best.task_id, domain: best.domain, claimLane: best.claim_lane, pacedRcpts: best.paced_rcpts };
}

/**
 * Claims up to `max` due pending jobs of `domain` (every task's: one session serves them all),
 * or none when another claimer is taking the same domain right now: a transaction-scoped
 * advisory lock on the domain makes concurrent claims of one domain take turns instead of
 * splitting its jobs between two sessions (SKIP LOCKED alone skips rows, not domains). Must run
 * inside a transaction, which holds the lock until it commits.
 *
 * A first-chunk target takes only the domain's first chunks (and any due retry of it), so a big
 * domain's first session does not carry its bulk; a retry or bulk target takes every due job of
 * the domain, lanes in order, so a deferring domain's retries and its untried addresses share
 * one session. The attempt is counted at claim time, and the lease says until when the jobs are
 * ours.
 */
export async function claimDomainJobs(
  q: Queryable,
  c: { worker: string; now: Date; leaseUntil: Date; max: number; domain: string; claimLane: number },
): Promise<JobRecord[]> {
  const { rows } = await q.query<JobRow>(
    `with turn as (
       select pg_try_advisory_xact_lock(${CLAIM_TURN_CLASS}, hashtext($5)) as ours
     ), picked as (
       select j.id from email_jobs j, turn
        where turn.ours and j.status = 'pending' and j.run_after <= $2 and j.domain = $5
          and ($6::smallint <> $7::smallint or j.claim_lane <= $7::smallint)
        order by j.claim_lane, j.run_after, j.task_id, j.position
        limit $4
        for update of j skip locked
     )
     update email_jobs j
        set status = 'processing', attempts = j.attempts + 1, locked_by = $1, locked_until = $3, updated_at = $2
       from picked
      where j.id = picked.id
     returning j.*`,
    [c.worker, c.now, c.leaseUntil, c.max, c.domain, c.claimLane, CLAIM_LANE.firstChunk],
  );
  return rows.map(toJob);
}

/**
 * Remembers where domains' mail is served and by which provider (upserts; a later look-up
 * replaces an earlier one, an unnamed provider keeps the one known).
 */
export async function rememberDomainHosts(
  q: Queryable,
  learnt: ReadonlyArray<{ domain: string; host: string; provider?: string | null }>,
  at: Date,
): Promise<void> {
  if (learnt.length === 0) return;
  await q.query(
    `insert into mail_domain_hosts (domain, host, provider, learnt_at)
     select d.domain, d.host, d.provider, $4
       from unnest($1::text[], $2::text[], $3::text[]) as d(domain, host, provider)
     on conflict (domain) do update
       set host = excluded.host, learnt_at = excluded.learnt_at,
           provider = coalesce(excluded.provider, mail_domain_hosts.provider)`,
    [learnt.map((l) => l.domain), learnt.map((l) => l.host), learnt.map((l) => l.provider ?? null), at],
  );
}

/** Forgets domains not learnt again since `before`; returns how many. */
export async function pruneDomainHosts(q: Queryable, before: Date): Promise<number> {
  const { rowCount } = await q.query("delete from mail_domain_hosts where learnt_at < $1", [before]);
  return rowCount;
}
