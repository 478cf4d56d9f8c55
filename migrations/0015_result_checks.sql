-- Per-check status of a result (syntax, dns, mx, reverse_dns, smtp; verify/checks.ts and
-- docs/checks.md): the spec's "per-check status" when some checks succeed and others fail. Rows
-- written before this migration have none; they are read with what their other columns prove
-- (checksOfLegacyResult), the rest `skipped`/`not_recorded`.
alter table email_verifications add column checks jsonb;
