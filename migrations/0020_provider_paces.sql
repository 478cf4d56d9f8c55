-- Provider paces (docs/pacing.md). A provider that throttles one of our client IPs across all its
-- mail servers ("421 4.7.0 Try again later, closing connection", Yahoo's [TSS04], Outlook.com's
-- 4.7.650) teaches a pace: at most max_rcpts RCPTs in any window_ms from that egress identity.
-- Every worker and the realtime API reserve their RCPTs here before asking the provider, so the
-- pace holds cluster-wide.
--
-- state 'probing': the provider refused us; window_ms is not known yet. One small session (a
-- probe) is let through at room_at; a refused probe moves room_at later, an accepted one sets
-- window_ms to how long the refusal lasted, counted from the burst's start (episode_start).
-- state 'paced': reservations fit under max_rcpts minus what provider_pace_spends holds for the
-- last window_ms.
-- room_at: the earliest moment a reservation can succeed; claims skip the provider's domains before it.
-- forget_at: no throttle since long enough: the pace is dropped and the provider asked freely again.
create table provider_paces (
  provider       text not null,
  egress         text not null,
  state          text not null check (state in ('probing', 'paced')),
  max_rcpts      integer not null check (max_rcpts >= 1),
  window_ms      integer check (window_ms >= 1),
  episode_start  timestamptz not null,
  tripped_at     timestamptz not null,
  probe_at_ms    integer not null check (probe_at_ms >= 1),
  room_at        timestamptz not null,
  forget_at      timestamptz not null,
  trips          integer not null default 1,
  primary key (provider, egress)
);

-- RCPTs reserved (and, after the session, what it really asked) per provider and identity: the
-- pace's sliding window. A learnt pace starts with one row for the burst that tripped it. Rows
-- older than the window are deleted at the next reservation.
create table provider_pace_spends (
  id        bigint generated always as identity primary key,
  provider  text not null,
  egress    text not null,
  at        timestamptz not null,
  rcpts     integer not null check (rcpts >= 0)
);
create index provider_pace_spends_window_idx on provider_pace_spends (provider, egress, at);

-- The provider of each domain's mail server (egress.ts providerOf over the MX name), learnt with
-- its host: a claim skips the domains of a provider whose pace has no room now.
alter table mail_domain_hosts add column provider text;
create index mail_domain_hosts_provider_idx on mail_domain_hosts (provider);
