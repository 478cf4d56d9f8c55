-- Operator grants are labelled (issue 23, rule 4): ledger rows written by `mailprobe users create
-- --credits` (reason `initial_grant`) and `mailprobe credits grant` (the operator's own reason,
-- also through the loopback admin API) now carry metadata.source = 'operator', like the
-- ADMIN_TOKEN console's grants always did. Before, those two wrote `{}`, so the usage reports
-- counted them with no source (only in source=all, and in the per-key report's unknown bucket).
--
-- Relabelling the rows they wrote is safe because they are recognisable without doubt: since
-- 0001 every other writer of the ledger puts a source in the metadata (realtime charges,
-- task reservations, refunds and cancellations: `api_key` or `frontend`, with the
-- verification or task id), and the console's grants say `operator`. A grant whose metadata is
-- exactly `{}` and that has no idempotency key (neither command ever passed one; every
-- reservation, charge and refund has one) came from one of those two commands. The reason
-- cannot serve as the test: `credits grant --reason` is free text. Deductions are untouched
-- (no operator path ever wrote one). Only metadata changes: amounts, balances and the
-- append-only order stay as they were.
update credit_transactions
   set metadata = '{"source": "operator"}'::jsonb
 where type = 'grant'
   and metadata = '{}'::jsonb
   and idempotency_key is null;

-- source=operator in GET /credits/usage, as 0003 does for api_key and frontend: a partial
-- index whose predicate db/queries/reports.ts repeats literally, for an index-only scan. Few
-- rows (a user has a handful of grants), so it costs next to nothing to keep.
create index credit_transactions_operator_usage_idx
  on credit_transactions (user_id, created_at) include (amount)
  where metadata->>'source' = 'operator';
