-- user_version = 20

-- index approvals_inbox
CREATE INDEX approvals_inbox ON approvals(inbox_id, requested_at DESC, id DESC);

-- index attachments_message
CREATE INDEX attachments_message ON attachments(message_id, position);

-- index console_sessions_expiry
CREATE INDEX console_sessions_expiry ON console_sessions(expires_at);

-- index console_sessions_key
CREATE INDEX console_sessions_key ON console_sessions(key_id);

-- index deferred_messages_inbox
CREATE INDEX deferred_messages_inbox ON deferred_messages(inbox_id, raw_sha256);

-- index deliveries_due
CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE next_attempt_at IS NOT NULL;

-- index deliveries_message
CREATE INDEX deliveries_message ON deliveries(message_id, id);

-- index inboxes_project
CREATE INDEX inboxes_project ON inboxes(project_id, created_at, id);

-- index message_aliases_lookup
CREATE INDEX message_aliases_lookup ON message_aliases(inbox_id, rfc_message_id);

-- index message_aliases_message
CREATE INDEX message_aliases_message ON message_aliases(message);

-- index messages_inbox_recent
CREATE INDEX messages_inbox_recent ON messages(inbox_id, created_at DESC, id DESC);

-- index messages_rfc
CREATE INDEX messages_rfc ON messages(inbox_id, rfc_message_id);

-- index messages_unconfirmed
CREATE INDEX messages_unconfirmed ON messages(inbox_id, created_at)
	WHERE direction = 'outbound' AND message_id_confirmed = 0;

-- index missing_parents_thread
CREATE INDEX missing_parents_thread ON missing_parents(thread_id);

-- index threads_inbox_recent
CREATE INDEX threads_inbox_recent ON threads(inbox_id, last_message_at DESC, id DESC);

-- index webhook_attempts_delivery
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(endpoint_id, event_seq, id);

-- index webhook_deliveries_due
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint_id, next_attempt_at) WHERE next_attempt_at IS NOT NULL;

-- index webhook_deliveries_legacy
CREATE UNIQUE INDEX webhook_deliveries_legacy ON webhook_deliveries(legacy_id) WHERE legacy_id IS NOT NULL;

-- index webhook_endpoints_project
CREATE INDEX webhook_endpoints_project ON webhook_endpoints(project_id, created_at, id);

-- table api_keys
CREATE TABLE api_keys (
	id           TEXT PRIMARY KEY,
	project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	name         TEXT NOT NULL,
	token_hash   BLOB NOT NULL UNIQUE, -- SHA-256 of the token; the token itself is never stored
	token_prefix TEXT NOT NULL,
	scopes       TEXT NOT NULL,        -- space-separated
	inbox_ids    TEXT,                 -- JSON list; NULL = every inbox of the project
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER
) STRICT;

-- table approvals
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

-- table attachment_chunks
CREATE TABLE attachment_chunks (
	attachment_id TEXT NOT NULL REFERENCES attachments(id) ON DELETE CASCADE,
	seq           INTEGER NOT NULL,
	data          BLOB NOT NULL,
	PRIMARY KEY (attachment_id, seq)
) STRICT;

-- table attachments
CREATE TABLE attachments (
	id           TEXT PRIMARY KEY,
	message_id   TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	position     INTEGER NOT NULL,
	filename     TEXT,
	content_type TEXT NOT NULL,
	disposition  TEXT NOT NULL,
	content_id   TEXT,
	bytes        INTEGER NOT NULL,
	scan_status  TEXT NOT NULL,
	data         BLOB NOT NULL
) STRICT;

-- table console_sessions
CREATE TABLE console_sessions (
	id_hash    BLOB PRIMARY KEY,
	key_id     TEXT NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- table contents
CREATE TABLE contents (
	message INTEGER PRIMARY KEY REFERENCES messages(pk) ON DELETE CASCADE,
	trace   BLOB,
	body    BLOB,
	data    BLOB NOT NULL
, raw_format INTEGER NOT NULL DEFAULT 0) STRICT;

-- table deferred_messages
CREATE TABLE deferred_messages (
	id          INTEGER PRIMARY KEY,
	inbox_id    TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	address_tag TEXT,
	raw_sha256  BLOB NOT NULL,
	raw         BLOB NOT NULL,
	trace       BLOB NOT NULL,
	envelope    TEXT NOT NULL, -- JSON of the SMTP envelope
	simulated   INTEGER NOT NULL,
	received_at INTEGER NOT NULL
) STRICT;

-- table deliveries
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

-- table drafts
CREATE TABLE drafts (
	id         TEXT PRIMARY KEY,
	inbox_id   TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	send       TEXT NOT NULL, -- JSON of the composed send (addresses, subject, bodies, attachment metadata, threading)
	raw        BLOB NOT NULL, -- the exact bytes that go out on approval
	created_at INTEGER NOT NULL
) STRICT;

-- table events
CREATE TABLE "events" (
	project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	seq         INTEGER NOT NULL,
	id          TEXT NOT NULL, -- nothing looks an event up by it: no index
	inbox_id    TEXT,
	type        TEXT NOT NULL,
	environment TEXT NOT NULL,
	body        BLOB NOT NULL,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (project_id, seq)
) STRICT, WITHOUT ROWID;

-- table events_floor
CREATE TABLE events_floor (
	one INTEGER PRIMARY KEY CHECK (one = 1),
	seq INTEGER NOT NULL
) STRICT;

-- table idempotency_keys
CREATE TABLE idempotency_keys (
	project_id   TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	key          TEXT NOT NULL,
	request_hash BLOB NOT NULL,
	result     BLOB NOT NULL,
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (project_id, key)
) STRICT, WITHOUT ROWID;

-- table inboxes
CREATE TABLE inboxes (
	id              TEXT PRIMARY KEY,
	project_id      TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
	address         TEXT NOT NULL UNIQUE COLLATE NOCASE,
	display_name    TEXT NOT NULL DEFAULT '',
	environment     TEXT NOT NULL DEFAULT 'live' CHECK (environment IN ('live', 'test')),
	send_policy     TEXT NOT NULL DEFAULT 'allow' CHECK (send_policy IN ('allow', 'approve_all', 'approve_external')),
	allowed_domains TEXT NOT NULL DEFAULT '[]', -- JSON list
	created_at      INTEGER NOT NULL
) STRICT;

-- table message_aliases
CREATE TABLE message_aliases (
	inbox_id       TEXT NOT NULL,
	rfc_message_id TEXT NOT NULL,
	message        INTEGER NOT NULL REFERENCES messages(pk) ON DELETE CASCADE
) STRICT;

-- table messages
CREATE TABLE "messages" (
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

-- table messages_fts
CREATE VIRTUAL TABLE messages_fts USING fts5(
	subject, addresses, body, scope,
	content = '', contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);

-- table missing_parents
CREATE TABLE missing_parents (
	inbox_id       TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	rfc_message_id TEXT NOT NULL,
	thread_id      TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	PRIMARY KEY (inbox_id, rfc_message_id)
) STRICT, WITHOUT ROWID;

-- table projects
CREATE TABLE projects (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	created_at INTEGER NOT NULL
, events_pruned_through INTEGER NOT NULL DEFAULT 0) STRICT;

-- table raw_chunks
CREATE TABLE raw_chunks (
	message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	data       BLOB NOT NULL,
	PRIMARY KEY (message_id, seq)
) STRICT;

-- table search_index
CREATE TABLE search_index (
	id              INTEGER PRIMARY KEY CHECK (id = 1),
	indexed_through INTEGER NOT NULL
) STRICT;

-- table search_keys
CREATE TABLE search_keys (
	key     INTEGER PRIMARY KEY,
	message INTEGER NOT NULL -- messages.rowid
) STRICT;

-- table settings
CREATE TABLE settings (
	key   TEXT PRIMARY KEY,
	value BLOB NOT NULL
) STRICT;

-- table threads
CREATE TABLE "threads" (
	id                     TEXT PRIMARY KEY,
	inbox_id               TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	subject                TEXT NOT NULL,
	preview                TEXT NOT NULL DEFAULT '',
	message_count          INTEGER NOT NULL DEFAULT 0,
	last_sequence          INTEGER NOT NULL DEFAULT 0,
	last_message_at        INTEGER NOT NULL,
	last_message_direction TEXT NOT NULL,
	created_at             INTEGER NOT NULL,
	has_attachments        INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID;

-- table webhook_attempts
CREATE TABLE "webhook_attempts" (
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

-- table webhook_deliveries
CREATE TABLE "webhook_deliveries" (
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

-- table webhook_endpoints
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
, claimed_seq INTEGER NOT NULL DEFAULT 0) STRICT;
