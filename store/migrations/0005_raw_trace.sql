-- The trace header is kept apart from the bytes as received, so a large
-- message is stored without first copying it behind its Received: line.
-- The raw route serves trace then data.
ALTER TABLE raw_messages ADD COLUMN trace BLOB NOT NULL DEFAULT x'';
