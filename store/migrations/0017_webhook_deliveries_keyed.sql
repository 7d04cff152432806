-- inboxd:foreign_keys off
--
-- A webhook delivery is one event's delivery to one endpoint; key it so
-- (issue 18: fewer B-trees per message). A message.received event with
-- one endpoint subscribed used to write four B-trees of deliveries in the
-- transaction its 250 waits for: the table (keyed by a random id), the
-- endpoint's list, the event's link and the due queue. Now it writes one:
--
-- * the key is (endpoint_id, event_seq): the endpoint's list (newest
--   first by seq) is the table's own order, and the id is made from the
--   key (deliveryID in id.go) instead of stored. Ids given out before
--   this migration stay valid: legacy_id keeps them, indexed only where
--   set;
-- * a new delivery is due at once and not in the due index: it is found
--   from the endpoint's claimed_seq, past which every delivery of that
--   endpoint with no next_attempt_at is new (webhook.go). The due index
--   holds what was claimed (until its lease ends) or is waiting for a
--   retry, per endpoint;
-- * no foreign key to events (whose cascade needed the event_seq index):
--   retention deletes an event's deliveries with it (PruneEvents);
-- * attempts belong to the delivery's key.

CREATE TABLE webhook_deliveries_new (
	endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
	event_seq       INTEGER NOT NULL, -- events(seq)
	status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
	attempt_count   INTEGER NOT NULL DEFAULT 0,
	-- When a claimed or retried delivery is due; NULL for a new one (due
	-- at created_at) and once delivered or failed.
	next_attempt_at INTEGER,
	created_at      INTEGER NOT NULL,
	legacy_id       TEXT, -- the id of a delivery queued before this migration
	PRIMARY KEY (endpoint_id, event_seq)
) STRICT, WITHOUT ROWID;

-- inboxd:batched events
INSERT INTO webhook_deliveries_new (endpoint_id, event_seq, status, attempt_count, next_attempt_at, created_at, legacy_id)
SELECT endpoint_id, event_seq, status, attempt_count, next_attempt_at, created_at, id FROM webhook_deliveries
WHERE event_seq > ?1 AND event_seq <= ?2
-- inboxd:end

CREATE TABLE webhook_attempts_new (
	id               INTEGER PRIMARY KEY,
	endpoint_id      TEXT NOT NULL,
	event_seq        INTEGER NOT NULL,
	at               INTEGER NOT NULL,
	status_code      INTEGER,
	duration_ms      INTEGER,
	response_excerpt TEXT,
	error            TEXT,
	FOREIGN KEY (endpoint_id, event_seq) REFERENCES webhook_deliveries(endpoint_id, event_seq) ON DELETE CASCADE
) STRICT;

INSERT INTO webhook_attempts_new (id, endpoint_id, event_seq, at, status_code, duration_ms, response_excerpt, error)
SELECT a.id, d.endpoint_id, d.event_seq, a.at, a.status_code, a.duration_ms, a.response_excerpt, a.error
FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
ORDER BY a.id;

DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
ALTER TABLE webhook_attempts_new RENAME TO webhook_attempts;

CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint_id, next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE UNIQUE INDEX webhook_deliveries_legacy ON webhook_deliveries(legacy_id) WHERE legacy_id IS NOT NULL;
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(endpoint_id, event_seq, id);

-- Every delivery queued so far has its next_attempt_at (new ones did then):
-- none is new in the sense above.
ALTER TABLE webhook_endpoints ADD COLUMN claimed_seq INTEGER NOT NULL DEFAULT 0;
UPDATE webhook_endpoints SET claimed_seq = coalesce((SELECT max(event_seq) FROM webhook_deliveries d WHERE d.endpoint_id = webhook_endpoints.id), 0);
