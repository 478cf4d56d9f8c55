-- Fair, spreading claims (docs/scheduling.md).
--
-- The claim walks the open tasks (the partial index below: a few rows however long the queue) and
-- probes each task's best due job (lane, then run_after) through email_jobs_task_claim_idx, then
-- orders the candidates by how many sessions their user and task already run. Before this the
-- claim read the whole queue in one order (lane, run_after), so a later user's list waited behind
-- every earlier job of the same lane.
create index tasks_open_idx on tasks (created_at) where finished_at is null;
create index email_jobs_task_claim_idx on email_jobs (task_id, claim_lane, run_after)
  where status = 'pending';

-- The mail server IP of each domain, as the workers learnt it (look-ups ahead and sessions): a
-- claim skips the domains whose server IP has every slot held in smtp_host_slots, cluster-wide,
-- instead of claiming them and waiting for a slot. Only a scheduling hint: a stale row costs a
-- claim, never a wrong answer. Rows not learnt again for a day are pruned.
create table mail_domain_hosts (
  domain     text primary key,
  host       text not null,
  learnt_at  timestamptz not null
);
create index mail_domain_hosts_host_idx on mail_domain_hosts (host);
create index mail_domain_hosts_learnt_idx on mail_domain_hosts (learnt_at);

-- Counting held slots per server IP (the claim's busy hosts) reads only held rows.
create index smtp_host_slots_held_idx on smtp_host_slots (host) where holder is not null;

-- A realtime request waiting for a slot at a server IP, until its deadline: while one waits, the
-- worker pools take no slot there and claim none of its domains, so the next slot freed there is
-- the request's (docs/scheduling.md, "Realtime first"). A waiter that dies leaves a row that
-- ends with its deadline.
create table smtp_host_waits (
  host    text not null,
  waiter  text not null,
  until   timestamptz not null,
  primary key (host, waiter)
);
