-- Event-log retention deletes the oldest events, and their webhook
-- deliveries with them (ON DELETE CASCADE): without an index on the child
-- key, every deleted event would scan webhook_deliveries.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_seq);
