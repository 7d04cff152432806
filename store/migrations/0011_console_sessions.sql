-- Web console sessions (SPEC §12). A session id is a bearer secret like
-- an API key's token and is stored the same way, as its SHA-256 only. A
-- session stands for the API key it was exchanged for: it ends at
-- sign-out, at expires_at, or as soon as the key is revoked (every lookup
-- joins the key), and goes with the key. Self-contained (IF NOT EXISTS,
-- no other table touched), so it can be renumbered when migrations from
-- parallel work meet.
CREATE TABLE IF NOT EXISTS console_sessions (
	id_hash    BLOB PRIMARY KEY,
	key_id     TEXT NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS console_sessions_key ON console_sessions(key_id);
CREATE INDEX IF NOT EXISTS console_sessions_expiry ON console_sessions(expires_at);
