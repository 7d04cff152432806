-- The trace header is kept apart from the bytes as received, so a large
-- message is stored without first copying it behind its Received: line.
-- The raw route serves trace then data. Nullable on purpose: adding a NOT
-- NULL column to a STRICT table makes SQLite check every existing row, a
-- minute and a half on a 9 GB database; NULL reads as no trace.
ALTER TABLE raw_messages ADD COLUMN trace BLOB;
