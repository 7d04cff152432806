-- inboxd:foreign_keys off
--
-- Two more B-trees off every inbound message (issue 18):
--
-- * the event log is read per project (the feed, the live view, a
--   cursor's check), so its rows are kept in that order: WITHOUT ROWID,
--   keyed by (project_id, seq), one B-tree where there were the table and
--   events_project. A seq stays unique across projects: the writer hands
--   them out (event.go) from the highest in any project's log or in
--   events_floor;
-- * a thread is found by its text id: WITHOUT ROWID makes the id the
--   table's key (one B-tree, not a rowid table and the id's autoindex).
--
-- Both copies keep every column as it is, batched by rowid.

CREATE TABLE events_new (
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

-- inboxd:batched events
INSERT INTO events_new (project_id, seq, id, inbox_id, type, environment, body, created_at)
SELECT project_id, seq, id, inbox_id, type, environment, body, created_at FROM events
WHERE seq > ?1 AND seq <= ?2
-- inboxd:end

-- The highest seq so far, wherever it is: the floor the writer counts on
-- from (event.go reads the highest of each project's log and this).
UPDATE events_floor SET seq = max(seq, coalesce((SELECT max(seq) FROM events), 0));

DROP TABLE events;
ALTER TABLE events_new RENAME TO events;

CREATE TABLE threads_new (
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

-- inboxd:batched threads
INSERT INTO threads_new (id, inbox_id, subject, preview, message_count, last_sequence, last_message_at,
	last_message_direction, created_at, has_attachments)
SELECT id, inbox_id, subject, preview, message_count, last_sequence, last_message_at,
	last_message_direction, created_at, has_attachments FROM threads
WHERE rowid > ?1 AND rowid <= ?2
-- inboxd:end

DROP TABLE threads;
ALTER TABLE threads_new RENAME TO threads;
CREATE INDEX threads_inbox_recent ON threads(inbox_id, last_message_at DESC, id DESC);
