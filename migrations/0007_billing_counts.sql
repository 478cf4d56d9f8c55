-- Billing units say what they are (issue 11 item 17, DESIGN §5 "Billing units"). `email_count`
-- stays the number of distinct canonical addresses queued (= jobs = credits reserved);
-- `submitted_count` is the entries submitted (JSON: the array's length, duplicates included;
-- upload: the rows whose email cell is address-shaped). An upload also keeps `skipped_count`:
-- the rows whose email cell is blank or not an address (no job, not billed). Older rows did not
-- record duplicates or skips: they read as submitted = distinct, nothing skipped (a task's null
-- submitted_count reads as its email_count).
alter table tasks add column submitted_count integer;
update tasks set submitted_count = email_count;

alter table uploads add column submitted_count integer;
update uploads set submitted_count = email_count;
alter table uploads alter column submitted_count set not null;
alter table uploads add column skipped_count integer not null default 0;
