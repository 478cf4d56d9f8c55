-- Tasks that finish when the user wants (issue 21 item 2).
--
-- retry_window_minutes: how long after its start a task keeps retrying addresses a server deferred
-- (greylisting, 4xx) or that were unreachable; null for tasks created before this migration (no
-- limit, as before). retries_end_at is that deadline, set when the task starts, and brought
-- forward to the moment of a "finish now": a retry that would run after it is not scheduled, the
-- address's unknown answer stands instead. Kept on the row so a restart changes nothing.
alter table tasks add column retry_window_minutes integer
  check (retry_window_minutes between 0 and 1440);
alter table tasks add column retries_end_at timestamptz;

-- The unknown answer a job is retrying after, so that settling it (finish now, the window's end)
-- keeps what the server said: the reason, the host, the evidence.
alter table email_jobs add column retry_result jsonb;
