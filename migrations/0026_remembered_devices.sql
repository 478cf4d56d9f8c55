-- Remembered devices (auth/remembered-devices.ts, issue 35 item 4): a browser that ticked
-- "Remember this device" at sign-in holds an HttpOnly cookie `<series>.<secret>` and opens
-- sessions with it (POST /api/v1/auth/device) without the API key. Only the secret's SHA-256 is
-- stored. Each use replaces the secret (rotation); the one it replaced is kept so that its reuse
-- after ROTATION_GRACE_MS reads as a stolen copy and revokes the device. A device is tied to its
-- user and to the key that signed in: revoking the key refuses the device. Sessions opened by a
-- device name it (sessions.device_id), so revoking the device ends them.
create table remembered_devices (
  id                    uuid primary key,
  user_id               uuid not null references users (id),
  api_key_id            uuid not null references api_keys (id),
  series                text not null unique,
  token_hash            text not null,
  previous_token_hash   text,
  rotated_at            timestamptz,
  user_agent            text not null,
  created_at            timestamptz not null,
  last_used_at          timestamptz,
  expires_at            timestamptz not null,
  revoked_at            timestamptz,
  revoked_reason        text check (revoked_reason in ('revoked', 'forgotten', 'reused', 'evicted'))
);
create index remembered_devices_key_idx on remembered_devices (api_key_id, created_at);
create index remembered_devices_user_idx on remembered_devices (user_id, expires_at);

alter table sessions add column device_id uuid references remembered_devices (id) on delete set null;
