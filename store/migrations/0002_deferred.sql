-- SPEC §4 deferred parent lookup.

-- An outbound message whose final Message-ID is not known yet (queued, or
-- handed to a relay that rewrites ids) has message_id_confirmed = 0.
ALTER TABLE messages ADD COLUMN message_id_confirmed INTEGER NOT NULL DEFAULT 1;
CREATE INDEX messages_unconfirmed ON messages(inbox_id, created_at)
	WHERE direction = 'outbound' AND message_id_confirmed = 0;

-- Inbound messages already acknowledged with 250 but not threaded yet,
-- kept as received so they can be stored exactly as if they had just
-- arrived.
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
CREATE INDEX deferred_messages_inbox ON deferred_messages(inbox_id, raw_sha256);
