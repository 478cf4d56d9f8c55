-- Operator console (issue 22 item 4): an operator may deactivate a user. The user's keys are
-- deactivated in the same transaction (their sessions die with them); deactivated_at is what the
-- authenticator checks for sessions not opened with a key (JWTs from JWT_JWKS_URL) and what stops
-- a new key from being created for the user. Null: active.
alter table users add column deactivated_at timestamptz;
