-- The event log (SPEC §8) and webhook delivery (SPEC §9).

-- seq is the log position: events are read in seq order and a cursor is a
-- seq. body is the exact envelope JSON, sent byte for byte on every attempt.
CREATE TABLE events (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	id          TEXT NOT NULL UNIQUE,
	project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	inbox_id    TEXT,
	type        TEXT NOT NULL,
	environment TEXT NOT NULL,
	body        BLOB NOT NULL,
	created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX events_project ON events(project_id, seq);

CREATE TABLE webhook_endpoints (
	id               TEXT PRIMARY KEY,
	project_id       TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	url              TEXT NOT NULL,
	event_types      TEXT NOT NULL DEFAULT '[]', -- JSON list; empty = all
	inbox_ids        TEXT,                       -- JSON list; NULL = all
	enabled          INTEGER NOT NULL DEFAULT 1,
	description      TEXT,
	secret           TEXT NOT NULL,              -- whsec_…
	previous_secret  TEXT,                       -- also signs until previous_until
	previous_until   INTEGER,
	disabled_reason  TEXT,
	created_at       INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_endpoints_project ON webhook_endpoints(project_id, created_at, id);

-- One row per endpoint and event, written in the event's transaction.
CREATE TABLE webhook_deliveries (
	id              TEXT PRIMARY KEY,
	endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
	event_seq       INTEGER NOT NULL REFERENCES events(seq) ON DELETE CASCADE,
	status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
	attempt_count   INTEGER NOT NULL DEFAULT 0,
	next_attempt_at INTEGER, -- NULL once delivered or failed
	created_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at DESC, id DESC);

CREATE TABLE webhook_attempts (
	id               INTEGER PRIMARY KEY,
	delivery_id      TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
	at               INTEGER NOT NULL,
	status_code      INTEGER,
	duration_ms      INTEGER,
	response_excerpt TEXT,
	error            TEXT
) STRICT;
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id, id);
