-- Issue 13 items 2 and 3: a result's typo suggestion (the address with a popular mail domain in
-- place of a dead look-alike, verify/suggest.ts) and whether its domain is a free mail provider.
-- Rows written before this migration have no suggestion and count as not free.
alter table email_verifications add column did_you_mean text;
alter table email_verifications add column is_free_provider boolean not null default false;
