-- One-time sign-in links (auth/sign-in-links.ts, issue 35 item 4): a way back into the dashboard
-- without typing the API key, minted by a `custom` key (`mailprobe client sign-in-link`) or by the
-- operator (`mailprobe users sign-in-link`). Only the SHA-256 of the random token is stored; a
-- link is tied to a key of its user and opens a session of that key, so it dies with the key.
-- Redeeming is one conditional UPDATE (used_at still null, not expired, key still active): two
-- concurrent uses cannot both succeed.
create table sign_in_links (
  token_hash  text primary key,
  user_id     uuid not null references users (id),
  api_key_id  uuid not null references api_keys (id),
  created_at  timestamptz not null,
  expires_at  timestamptz not null,
  used_at     timestamptz
);
create index sign_in_links_user_idx on sign_in_links (user_id, expires_at);
