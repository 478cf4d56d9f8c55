-- Retries counted per cause (issue 11 item 9). `attempts` counts claims, so a job re-claimed after
-- a crash or an expired lease had one attempt more and its greylisting schedule
-- (VERIFY_RETRY_DELAYS) one step less. The schedules are now indexed by these counters, raised
-- only when a retry of that class is scheduled; `attempts` still bounds internal failures
-- (JOB_MAX_ATTEMPTS) and is what the jobs listing shows. Jobs already waiting start at 0.
alter table email_jobs add column deferred_retries integer not null default 0;
alter table email_jobs add column unreachable_retries integer not null default 0;
