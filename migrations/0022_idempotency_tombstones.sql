-- A deleted task keeps its Idempotency-Key record, with task_id null, for the rest of the key's
-- 24-hour window: a retry of the request that created it is then refused (409) instead of
-- creating, and billing, a new task. Past the window the key may be used again, as any key.
alter table idempotency_keys alter column task_id drop not null;
