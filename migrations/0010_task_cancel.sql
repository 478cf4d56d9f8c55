-- Cancel and delete a task (issue 13 item 1).
--
-- A cancelled task is a finished one (finished_at is set at the cancel) that also says when it was
-- cancelled. Its pending jobs become `cancelled`: a final state that is neither billed nor
-- refunded by the normal finish (the cancel's refund already returned them). Its upload follows it.
alter table tasks add column cancelled_at timestamptz;

alter table email_jobs drop constraint email_jobs_status_check;
alter table email_jobs add constraint email_jobs_status_check
  check (status in ('pending', 'processing', 'completed', 'failed', 'cancelled'));

alter table uploads drop constraint uploads_status_check;
alter table uploads add constraint uploads_status_check
  check (status in ('processing', 'completed', 'failed', 'cancelled'));

-- RESULT_RETENTION_DAYS: the purge finds finished tasks older than the cutoff, oldest first.
create index tasks_finished_idx on tasks (finished_at) where finished_at is not null;

-- DELETE of a task removes its results: find them by task (the realtime ones have none).
create index email_verifications_task_idx on email_verifications (task_id) where task_id is not null;
