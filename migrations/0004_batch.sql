-- Batch pipeline: cluster-wide per-mail-host politeness and idempotent task creation.

-- One row per (MX host, slot number); a session may talk to a host only while holding one of
-- its SMTP_MAX_CONNECTIONS_PER_HOST slots. A holder that dies stops renewing `expires_at`, and
-- the slot becomes free again when it passes.
create table smtp_host_slots (
  host        text not null,
  slot        integer not null,
  holder      text,
  expires_at  timestamptz,
  primary key (host, slot)
);

-- Idempotency-Key of POST /api/v1/tasks (Stripe's model): a retried request with the same key
-- returns the task the first one created. Kept 24 h per user.
create table idempotency_keys (
  user_id       uuid not null references users (id),
  scope         text not null,
  key           text not null,
  request_hash  text not null,
  task_id       uuid not null references tasks (id),
  created_at    timestamptz not null,
  primary key (user_id, scope, key)
);

-- Download of a file-backed task joins each original row to its job by address.
create index email_jobs_task_email_idx on email_jobs (task_id, email_address);

-- The claim takes every due pending job of the chosen domain: find them by domain.
create index email_jobs_pending_domain_idx on email_jobs (domain, run_after) where status = 'pending';
