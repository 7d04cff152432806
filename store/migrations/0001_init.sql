-- Tenancy and access.
CREATE TABLE projects (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

-- Server-wide secrets and flags (the cursor signing secret lives here).
CREATE TABLE settings (
	key   TEXT PRIMARY KEY,
	value BLOB NOT NULL
) STRICT;

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
CREATE INDEX inboxes_project ON inboxes(project_id, created_at, id);

-- Threads and messages. Times are unix milliseconds.
CREATE TABLE threads (
	id                     TEXT PRIMARY KEY,
	inbox_id               TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	subject                TEXT NOT NULL,
	preview                TEXT NOT NULL DEFAULT '',
	message_count          INTEGER NOT NULL DEFAULT 0,
	last_sequence          INTEGER NOT NULL DEFAULT 0,
	last_message_at        INTEGER NOT NULL,
	last_message_direction TEXT NOT NULL,
	created_at             INTEGER NOT NULL
) STRICT;
CREATE INDEX threads_inbox_recent ON threads(inbox_id, last_message_at DESC, id DESC);

CREATE TABLE messages (
	id                       TEXT PRIMARY KEY,
	inbox_id                 TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	thread_id                TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	sequence                 INTEGER NOT NULL,
	direction                TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
	state                    TEXT NOT NULL,
	simulated                INTEGER NOT NULL DEFAULT 0,
	echo                     INTEGER NOT NULL DEFAULT 0,
	subject                  TEXT NOT NULL,
	preview                  TEXT NOT NULL,
	from_json                TEXT,          -- {"email","name"} or NULL
	to_json                  TEXT NOT NULL, -- [{"email","name"}]
	cc_json                  TEXT NOT NULL,
	bcc_json                 TEXT NOT NULL,
	reply_to_json            TEXT NOT NULL,
	rfc_message_id           TEXT NOT NULL, -- without angle brackets
	rfc_message_id_generated INTEGER NOT NULL DEFAULT 0,
	in_reply_to_json         TEXT NOT NULL, -- every extracted token, header order
	references_json          TEXT NOT NULL,
	thread_match             TEXT NOT NULL,
	address_tag              TEXT,
	parse_error              TEXT,
	raw_sha256               BLOB,          -- of the bytes as received, for duplicate detection
	raw_size                 INTEGER NOT NULL,
	created_at               INTEGER NOT NULL,
	deleted_at               INTEGER,
	UNIQUE (thread_id, sequence)
) STRICT;
CREATE INDEX messages_inbox_recent ON messages(inbox_id, created_at DESC, id DESC);

-- Raw bytes live apart so message rows stay small for list queries.
CREATE TABLE raw_messages (
	message_id TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
	data       BLOB NOT NULL
) STRICT;

CREATE TABLE bodies (
	message_id     TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
	text           TEXT,
	html           TEXT,
	extracted_text TEXT
) STRICT;

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
CREATE INDEX attachments_message ON attachments(message_id, position);

CREATE TABLE envelopes (
	message_id TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
	mail_from  TEXT NOT NULL,
	rcpt_to    TEXT NOT NULL, -- JSON list
	remote_ip  TEXT NOT NULL,
	helo       TEXT NOT NULL,
	tls        INTEGER NOT NULL,
	auth_user  TEXT
) STRICT;

-- Every id a message is known by in its inbox (its own, later relay aliases).
CREATE TABLE message_ids (
	inbox_id       TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	rfc_message_id TEXT NOT NULL,
	message_id     TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE
) STRICT;
CREATE INDEX message_ids_lookup ON message_ids(inbox_id, rfc_message_id);
CREATE INDEX message_ids_message ON message_ids(message_id);

-- SPEC §4 step 5: ids referenced but not (yet) stored, pointing at the thread
-- that referenced them first.
CREATE TABLE missing_parents (
	inbox_id       TEXT NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
	rfc_message_id TEXT NOT NULL,
	thread_id      TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
	PRIMARY KEY (inbox_id, rfc_message_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX missing_parents_thread ON missing_parents(thread_id);

-- Full-text index over subject, addresses and text; rowid = messages.rowid.
-- Contentless: the text is already stored in messages and bodies.
CREATE VIRTUAL TABLE messages_fts USING fts5(
	subject, addresses, body,
	content = '', contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);
