-- Webhook log, redelivery and secret rotation (issue 13 item 5).
--
-- Rotation keeps the previous secret signing beside the new one until the grace period ends
-- (Standard Webhooks: `webhook-signature` carries space-separated signatures, receivers accept any
-- match). Only one previous secret is kept: rotating again during a grace period drops the older
-- one. Stored like webhook_secret (the dispatcher needs the plaintext to sign).
alter table users add column webhook_secret_previous text;
alter table users add column webhook_secret_previous_until timestamptz;

-- A redelivery restarts the retry window (WEBHOOK_RETRY_HOURS) from the moment it was asked for;
-- null means the window runs from created_at, as before.
alter table webhook_deliveries add column retry_window_from timestamptz;

-- The log (GET /api/v1/webhooks/deliveries): one user's deliveries, newest first.
create index webhook_deliveries_user_idx on webhook_deliveries (user_id, created_at desc, id desc);
