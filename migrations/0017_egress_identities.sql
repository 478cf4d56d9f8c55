-- Egress identities (SMTP_EGRESS): mail servers count connections per client IP, so every
-- identity (a local source address, or a SOCKS5 proxy) has its own SMTP_MAX_CONNECTIONS_PER_HOST
-- slots at each server IP. Rows of the single identity of earlier versions get egress ''
-- (the name of the default identity), so slots held across an upgrade stay valid.
alter table smtp_host_slots add column egress text not null default '';
alter table smtp_host_slots drop constraint smtp_host_slots_pkey;
alter table smtp_host_slots add primary key (egress, host, slot);

-- An identity that drew a blocklist or throttling reply from a provider rests for it until
-- `until`: no session of any worker uses it for that provider meanwhile (docs/smtp-sessions.md).
create table smtp_egress_rests (
  egress    text not null,
  provider  text not null,
  until     timestamptz not null,
  reason    text not null,
  primary key (provider, egress)
);
