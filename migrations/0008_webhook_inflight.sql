-- Webhook scheduling (issue 11 item 6): every claim counts the deliveries in flight per receiver
-- host and per user (status 'delivering' under a live lease). This index keeps that count to the
-- few rows in flight instead of a scan of the whole outbox, delivered rows included.
create index webhook_deliveries_inflight_idx on webhook_deliveries (locked_until) where status = 'delivering';
