-- A message's raw bytes may be stored compressed (issue 18): raw_format
-- says how contents.data holds them, 0 as received, 1 in S2's block
-- format (raw.go). Every row before this one holds them as received.
ALTER TABLE contents ADD COLUMN raw_format INTEGER NOT NULL DEFAULT 0;
