-- inboxd:foreign_keys off
--
-- Fewer B-trees per message (issue 18, docs/design/schema-v2.md). One
-- inbound message used to write 25 B-trees in the transaction its 250
-- waits for (one webhook endpoint subscribed); this migration takes out 9:
--
-- * raw_messages, bodies and envelopes are one-to-one with their message
--   and keyed by its text id (a rowid table and the key's autoindex each).
--   The envelope becomes columns of messages (NULL for a message without
--   an SMTP envelope); the trace, the packed body and the raw bytes, in
--   that order, become one row of contents, keyed by the message's new
--   explicit INTEGER PRIMARY KEY (pk, the rowid it had: rowids of a table
--   without one may change in VACUUM, and VACUUM INTO makes backups). The
--   body stays out of messages: its rows are read by every list and by
--   threading, and a row with a 10 KB body spills its metadata columns to
--   overflow pages (measured: 64 KB mail took a quarter more CPU so). A
--   body read stops before the raw bytes that follow it;
-- * message_ids and its two indexes become one index of messages,
--   (inbox_id, rfc_message_id): a message's own Message-ID is already a
--   column. The other ids a message is known by (the final id a relay
--   gave an outbound message, deferred.go) go to message_aliases, written
--   only then;
-- * events lose AUTOINCREMENT (its sqlite_sequence row was rewritten by
--   every commit that logged an event): a seq is still never reused
--   (events_floor below). Their id loses its unique index: nothing looks
--   an event up by id, and ids are a millisecond and 80 random bits;
-- * webhook_deliveries become WITHOUT ROWID, keyed by their id.
--
-- Rows keep their rowids, so search_keys (key → messages rowid) and the
-- search watermark stay valid. The copies are batched by rowid range
-- (inboxd:batched), each batch logged, all in this one transaction: a
-- crash leaves the old schema as it was. Foreign keys are off while the
-- tables are rebuilt (SQLite's ALTER TABLE procedure: dropping a parent
-- table with them on would first delete every child row) and checked
-- before the commit.

-- Bodies stored before migration 0007 (plain columns, no packed) are
-- packed first, so that the copy moves one column.
-- inboxd:go pack-legacy-bodies

CREATE TABLE messages_new (
	pk                       INTEGER PRIMARY KEY,
	id                       TEXT NOT NULL UNIQUE,
	inbox_id                 TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	thread_id                TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	sequence                 INTEGER NOT NULL,
	direction                TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
	state                    TEXT NOT NULL,
	simulated                INTEGER NOT NULL DEFAULT 0,
	echo                     INTEGER NOT NULL DEFAULT 0,
	subject                  TEXT NOT NULL,
	preview                  TEXT NOT NULL,
	from_json                TEXT,
	to_json                  TEXT NOT NULL,
	cc_json                  TEXT NOT NULL,
	bcc_json                 TEXT NOT NULL,
	reply_to_json            TEXT NOT NULL,
	rfc_message_id           TEXT NOT NULL,
	rfc_message_id_generated INTEGER NOT NULL DEFAULT 0,
	in_reply_to_json         TEXT NOT NULL,
	references_json          TEXT NOT NULL,
	thread_match             TEXT NOT NULL,
	address_tag              TEXT,
	parse_error              TEXT,
	raw_sha256               BLOB,
	raw_size                 INTEGER NOT NULL,
	created_at               INTEGER NOT NULL,
	deleted_at               INTEGER,
	message_id_confirmed     INTEGER NOT NULL DEFAULT 1,
	approval_id              TEXT,
	-- The SMTP envelope of an inbound message; all NULL for the others.
	env_mail_from            TEXT,
	env_rcpt_to              TEXT, -- JSON list
	env_remote_ip            TEXT,
	env_helo                 TEXT,
	env_tls                  INTEGER,
	env_auth_user            TEXT,
	UNIQUE (thread_id, sequence)
) STRICT;

-- inboxd:batched messages
INSERT INTO messages_new (pk, id, inbox_id, thread_id, sequence, direction, state, simulated, echo, subject, preview,
	from_json, to_json, cc_json, bcc_json, reply_to_json, rfc_message_id, rfc_message_id_generated, in_reply_to_json,
	references_json, thread_match, address_tag, parse_error, raw_sha256, raw_size, created_at, deleted_at,
	message_id_confirmed, approval_id, env_mail_from, env_rcpt_to, env_remote_ip, env_helo, env_tls, env_auth_user)
SELECT m.rowid, m.id, m.inbox_id, m.thread_id, m.sequence, m.direction, m.state, m.simulated, m.echo, m.subject, m.preview,
	m.from_json, m.to_json, m.cc_json, m.bcc_json, m.reply_to_json, m.rfc_message_id, m.rfc_message_id_generated, m.in_reply_to_json,
	m.references_json, m.thread_match, m.address_tag, m.parse_error, m.raw_sha256, m.raw_size, m.created_at, m.deleted_at,
	m.message_id_confirmed, m.approval_id, e.mail_from, e.rcpt_to, e.remote_ip, e.helo, e.tls, e.auth_user
FROM messages m LEFT JOIN envelopes e ON e.message_id = m.id
WHERE m.rowid > ?1 AND m.rowid <= ?2
ORDER BY m.rowid
-- inboxd:end

-- What a message holds: our trace header, its packed body (text, html and
-- extracted text, store/body.go; NULL: none) and the bytes as received
-- (followed by raw_chunks when large).
CREATE TABLE contents (
	message INTEGER PRIMARY KEY REFERENCES messages(pk) ON DELETE CASCADE,
	trace   BLOB,
	body    BLOB,
	data    BLOB NOT NULL
) STRICT;

-- inboxd:batched messages
INSERT INTO contents (message, trace, body, data)
SELECT m.rowid, r.trace, b.packed, r.data FROM messages m JOIN raw_messages r ON r.message_id = m.id
	LEFT JOIN bodies b ON b.message_id = m.id
WHERE m.rowid > ?1 AND m.rowid <= ?2
ORDER BY m.rowid
-- inboxd:end

CREATE TABLE message_aliases (
	inbox_id       TEXT NOT NULL,
	rfc_message_id TEXT NOT NULL,
	message        INTEGER NOT NULL REFERENCES messages(pk) ON DELETE CASCADE
) STRICT;

INSERT INTO message_aliases (inbox_id, rfc_message_id, message)
SELECT i.inbox_id, i.rfc_message_id, m.rowid FROM message_ids i JOIN messages m ON m.id = i.message_id
WHERE i.rfc_message_id <> m.rfc_message_id OR i.inbox_id <> m.inbox_id
ORDER BY i.rowid;

DROP TABLE message_ids;
DROP TABLE envelopes;
DROP TABLE bodies;
DROP TABLE raw_messages;
DROP TABLE messages;
ALTER TABLE messages_new RENAME TO messages;

CREATE INDEX messages_inbox_recent ON messages(inbox_id, created_at DESC, id DESC);
CREATE INDEX messages_unconfirmed ON messages(inbox_id, created_at)
	WHERE direction = 'outbound' AND message_id_confirmed = 0;
CREATE INDEX messages_rfc ON messages(inbox_id, rfc_message_id);
CREATE INDEX message_aliases_lookup ON message_aliases(inbox_id, rfc_message_id);
CREATE INDEX message_aliases_message ON message_aliases(message);

CREATE TABLE events_new (
	seq         INTEGER PRIMARY KEY,
	id          TEXT NOT NULL, -- nothing looks an event up by it: no index
	project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	inbox_id    TEXT,
	type        TEXT NOT NULL,
	environment TEXT NOT NULL,
	body        BLOB NOT NULL,
	created_at  INTEGER NOT NULL
) STRICT;

-- inboxd:batched events
INSERT INTO events_new (seq, id, project_id, inbox_id, type, environment, body, created_at)
SELECT seq, id, project_id, inbox_id, type, environment, body, created_at FROM events
WHERE seq > ?1 AND seq <= ?2
ORDER BY seq
-- inboxd:end

-- AUTOINCREMENT's promise, kept without it: a seq handed out to an event
-- since deleted is never handed out again. Retention deletes a prefix of
-- the log, so only an emptied log could give one out again; this row holds
-- the last seq retention deleted, and the insert counts on from it when
-- the log is empty (event.go).
CREATE TABLE events_floor (
	one INTEGER PRIMARY KEY CHECK (one = 1),
	seq INTEGER NOT NULL
) STRICT;
INSERT INTO events_floor (one, seq)
SELECT 1, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0);

DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_project ON events(project_id, seq);
DELETE FROM sqlite_sequence WHERE name = 'events';

-- A delivery row is small and found by its text id: WITHOUT ROWID makes
-- the id the table's own key (one B-tree, not a rowid table and the id's
-- autoindex).
CREATE TABLE webhook_deliveries_new (
	id              TEXT PRIMARY KEY,
	endpoint_id     TEXT NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
	event_seq       INTEGER NOT NULL REFERENCES events(seq) ON DELETE CASCADE,
	status          TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
	attempt_count   INTEGER NOT NULL DEFAULT 0,
	next_attempt_at INTEGER, -- NULL once delivered or failed
	created_at      INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- inboxd:batched webhook_deliveries
INSERT INTO webhook_deliveries_new (id, endpoint_id, event_seq, status, attempt_count, next_attempt_at, created_at)
SELECT id, endpoint_id, event_seq, status, attempt_count, next_attempt_at, created_at FROM webhook_deliveries
WHERE rowid > ?1 AND rowid <= ?2
-- inboxd:end

DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries(endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_seq);

