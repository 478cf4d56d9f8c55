-- Indexes for the usage reports (GET /api/v1/credits/usage). Measured on PostgreSQL 15 with
-- bench/reports.ts: one user with 1,000,000 ledger rows over 120 days among 50 light users, a
-- 90-day range (750,000 rows); EXPLAIN ANALYZE and the medians are in docs/reporting.md.
--
-- The statements read user_id, created_at and amount only, so an index carrying amount answers
-- them with an index-only scan (no heap visit: the ledger is append-only, so autovacuum keeps
-- its pages all-visible). The `source` filters are partial indexes: their predicate must appear
-- literally in the query (db/queries/reports.ts writes it so), and PostgreSQL then needs neither
-- the heap nor the metadata column. An expression index on metadata->>'source' would not do:
-- the planner only considers an index-only scan when the whole `metadata` column is in the index.
--
-- Not indexed, on purpose:
--   - the per-key report (/credits/usage/api-keys) needs metadata->>'api_key_id' of every row,
--     which no index-only scan can return (same planner rule), so it reads the heap through a
--     (user_id, created_at) index or a sequential scan whatever we add;
--   - the metrics (/metrics/verifications) are served by email_verifications_user_created_idx,
--     email_jobs_user_created_idx and tasks_user_created_idx of 0001; a covering index on
--     email_jobs would be rewritten on every job state change (pending → processing →
--     completed) for a gain bounded by the distinct-address count, which dominates and needs the
--     addresses themselves.

-- source=all: (user_id, created_at) range, amount for the sums without the heap. It also serves
-- every other per-user time-range read of the ledger (0001 has no separate time index).
create index credit_transactions_usage_idx
  on credit_transactions (user_id, created_at) include (amount);

-- source=api_key (charges, task reservations and refunds made with an API key).
create index credit_transactions_api_key_usage_idx
  on credit_transactions (user_id, created_at) include (amount)
  where metadata->>'source' = 'api_key';

-- source=frontend (dashboard sessions).
create index credit_transactions_frontend_usage_idx
  on credit_transactions (user_id, created_at) include (amount)
  where metadata->>'source' = 'frontend';
