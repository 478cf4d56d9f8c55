-- Dashboard sessions held on the server (auth/sessions.ts): a session token names its row (claim
-- `sid`) and its generation (claim `gen`). A renewal moves the generation on, so the token it
-- replaces stops working (after a 30 s grace for the tabs still holding it); signing out ends the
-- row, so every token of the session stops at once on every node. Before, sessions were signed
-- tokens only: a stolen one lived until it expired and could be renewed for 12 hours.
create table sessions (
  id            uuid primary key,
  user_id       uuid not null references users (id),
  api_key_id    uuid not null references api_keys (id),
  signed_in_at  timestamptz not null,
  generation    integer not null default 0,
  rotated_at    timestamptz,
  ended_at      timestamptz,
  created_at    timestamptz not null
);
create index sessions_user_idx on sessions (user_id, created_at);
