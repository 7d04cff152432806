-- Search pages the newest matches without collecting and sorting all of
-- them (store/searchindex.go). A messages_fts rowid is now a search key
-- that follows the lists' order: the message's created_at (unix ms) times
-- 2^21 plus a slot unique within that millisecond, so FTS5 itself serves
-- ORDER BY rowid DESC LIMIT n, and a cursor is a rowid bound. search_keys
-- maps each key back to its message (messages.rowid).
--
-- A fourth column, scope, holds tokens user text never reaches (queries
-- put their words under a column filter): the inbox, the thread and the
-- direction. A search ANDs its words with the inbox's token, so FTS5
-- skips other inboxes' matches by seeking instead of reading them.
--
-- Rows are rebuilt from the stored messages: the index starts empty
-- with its mark at 0, and store.Open indexes everything again before it
-- returns (logging progress), so the server takes no traffic until done.
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5(
	subject, addresses, body, scope,
	content = '', contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);
DROP TABLE IF EXISTS search_keys;
CREATE TABLE search_keys (
	key     INTEGER PRIMARY KEY,
	message INTEGER NOT NULL -- messages.rowid
) STRICT;
UPDATE search_index SET indexed_through = 0;
