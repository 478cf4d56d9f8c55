-- The realtime hot path (issue 14): the free-repeat decision as one indexed fact per (user,
-- address) instead of a scan of email_verifications, and the claim that makes a charge atomic.
--
-- charged_at is the newest time the user paid for this canonical address: a charged realtime
-- verification, or a billed batch result (its task's reservation paid for it). A repeat within
-- 24 hours of it is free (spec, realtime credit rules). The realtime charge claims the row with
-- INSERT … ON CONFLICT DO UPDATE … WHERE charged_at <= now - 24 h in the same statement as the
-- balance update and the ledger row, so of concurrent identical requests on any number of nodes
-- exactly one is charged. No foreign key: users are never deleted, and the hot statement should
-- not pay for the check.
create table address_charges (
  user_id     uuid not null,
  email       text not null,
  charged_at  timestamptz not null,
  primary key (user_id, email)
);

-- Every stored verification that was paid for keeps its address's fact current, whoever wrote
-- it (the realtime charge, a batch worker's group, an operator's import): the same rule the
-- free-repeat query used to apply to email_verifications itself. One upsert per statement, in key
-- order, so two writers touching the same addresses lock them in the same order.
create function address_charges_from_verifications() returns trigger language plpgsql as $$
begin
  insert into address_charges (user_id, email, charged_at)
  select user_id, email, max(created_at)
    from inserted
   where credit_transaction_id is not null or (origin = 'batch' and status <> 'unknown')
   group by user_id, email
   order by user_id, email
  on conflict (user_id, email) do update
    set charged_at = greatest(address_charges.charged_at, excluded.charged_at);
  return null;
end
$$;

create trigger email_verifications_address_charges
  after insert on email_verifications
  referencing new table as inserted
  for each statement execute procedure address_charges_from_verifications();

-- What the old free-repeat query counted as paid within the last day.
insert into address_charges (user_id, email, charged_at)
select user_id, email, max(created_at)
  from email_verifications
 where created_at > now() - interval '1 day'
   and (credit_transaction_id is not null or (origin = 'batch' and status <> 'unknown'))
 group by user_id, email;
