-- Large messages and attachments are stored in chunks after their row's
-- data, so neither receiving nor serving a 25 MB message holds it in memory
-- whole: SQLite copies a bound blob and builds its record in memory, and
-- there is no incremental blob I/O in the driver. A message's bytes as
-- received are raw_messages.data followed by its raw_chunks in seq order;
-- an attachment's are attachments.data followed by its attachment_chunks.
-- Small ones (almost all) have no chunks.
CREATE TABLE raw_chunks (
	message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	data       BLOB NOT NULL,
	PRIMARY KEY (message_id, seq)
) STRICT;

CREATE TABLE attachment_chunks (
	attachment_id TEXT NOT NULL REFERENCES attachments(id) ON DELETE CASCADE,
	seq           INTEGER NOT NULL,
	data          BLOB NOT NULL,
	PRIMARY KEY (attachment_id, seq)
) STRICT;
