-- Full-text rows are written after the commit that stores a message, by
-- the search indexer in large batches (store/searchindex.go), instead of
-- inside every ingest transaction. indexed_through is the high-water mark:
-- every message with a rowid at or below it that is not deleted has its
-- messages_fts row. Everything stored so far was indexed at once.
CREATE TABLE search_index (
	id              INTEGER PRIMARY KEY CHECK (id = 1),
	indexed_through INTEGER NOT NULL
) STRICT;
INSERT INTO search_index (id, indexed_through) SELECT 1, coalesce(max(rowid), 0) FROM messages;
