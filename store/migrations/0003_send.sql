-- Sending (SPEC §6, §7).

-- One row per recipient of an outbound message: its route, status and
-- retry state. next_attempt_at is NULL once the status is final.
CREATE TABLE deliveries (
	id              INTEGER PRIMARY KEY,
	message_id      TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	email           TEXT NOT NULL,
	type            TEXT NOT NULL CHECK (type IN ('to', 'cc', 'bcc')),
	route           TEXT NOT NULL CHECK (route IN ('local', 'capture', 'relay')),
	status          TEXT NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	next_attempt_at INTEGER,
	first_attempt_at INTEGER,
	smtp_code       INTEGER,
	smtp_message    TEXT,
	updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX deliveries_message ON deliveries(message_id, id);
CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE next_attempt_at IS NOT NULL;

-- Idempotency-Key: the first request's answer, stored in the send's
-- transaction and replayed byte for byte.
CREATE TABLE idempotency_keys (
	project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	key          TEXT NOT NULL,
	request_hash BLOB NOT NULL,
	status       INTEGER NOT NULL,
	response     BLOB NOT NULL,
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (project_id, key)
) STRICT, WITHOUT ROWID;

-- Held sends (SPEC §7): the exact composed message waits for a decision.
CREATE TABLE drafts (
	id         TEXT PRIMARY KEY,
	inbox_id   TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	send       TEXT NOT NULL, -- JSON of the composed send (addresses, subject, bodies, attachment metadata, threading)
	raw        BLOB NOT NULL, -- the exact bytes that go out on approval
	created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE approvals (
	id           TEXT PRIMARY KEY,
	inbox_id     TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	draft_id     TEXT NOT NULL REFERENCES drafts(id) ON DELETE CASCADE,
	draft_sha256 BLOB NOT NULL,
	status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
	requested_at INTEGER NOT NULL,
	decided_at   INTEGER,
	decided_by   TEXT,
	reason       TEXT,
	message_id   TEXT,
	thread_id    TEXT
) STRICT;
CREATE INDEX approvals_inbox ON approvals(inbox_id, requested_at DESC, id DESC);

-- Which approval an outbound message came from.
ALTER TABLE messages ADD COLUMN approval_id TEXT;
