-- Claim order (docs/engine.md, "Claim order"): which pending job a worker takes next.
--
-- claim_lane, lowest first, then run_after:
--   0  a retry of a server's answer (deferred or unreachable), due now: a step of a retry chain,
--      whose lateness adds straight to its task's end;
--   1  a domain's first chunk in its task (its first CLAIM_FIRST_CHUNK addresses by position):
--      every domain gets its first session before any domain's bulk, so a domain that defers
--      starts its retry chain early instead of when the pass reaches it;
--   2  the rest (the bulk).
-- Before this, the claim took the oldest run_after, so a task's initial jobs (all created at one
-- instant) came before every retry that fell due during the pass: a greylisted address's retries
-- waited for the whole list. Existing rows keep lane 2 (the old order).
alter table email_jobs add column claim_lane smallint not null default 2
  check (claim_lane between 0 and 2);

-- The claim's target query reads this index in order and stops at the first unlocked row.
create index email_jobs_lane_claim_idx on email_jobs (claim_lane, run_after, domain)
  where status = 'pending';
drop index email_jobs_claim_idx;
