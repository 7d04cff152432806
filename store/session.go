package store

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The web console's sessions (migration 0011): a random id, stored only
// as its SHA-256, that stands for an API key until it expires, is ended,
// or its key is revoked.

// CreateSession starts a session for a key that is not revoked, valid
// until expires, and returns its id (shown once, never stored). Sessions
// that have expired are dropped on the way.
func (db *DB) CreateSession(ctx context.Context, keyID string, expires time.Time) (string, error) {
	id := db.randomToken(32)
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := ms(db.now())
		if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE expires_at <= ?`, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO console_sessions (id_hash, key_id, created_at, expires_at)
			SELECT ?, id, ?, ? FROM api_keys WHERE id = ? AND revoked_at IS NULL`, sha([]byte(id)), now, ms(expires), keyID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("key %s: %w", keyID, ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	return id, nil
}

// SessionKey returns the key of the session whose id hashes to h, and the
// DataVersion it was checked at (as Authenticate does): ErrNotFound for
// an unknown or ended session, one that expired by now, and one whose key
// is revoked.
func (db *DB) SessionKey(ctx context.Context, h TokenHash, now time.Time) (Key, int64, error) {
	version, err := db.DataVersion(ctx)
	if err != nil {
		return Key{}, 0, err
	}
	var stored []byte
	k, err := scanKey(db.readRow(ctx, `SELECT `+keyColumns+`, s.h FROM api_keys
		JOIN (SELECT key_id, id_hash AS h FROM console_sessions WHERE id_hash = ? AND expires_at > ?) s ON s.key_id = api_keys.id
		WHERE revoked_at IS NULL`, h[:], ms(now)), &stored)
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, 0, ErrNotFound
	}
	if err != nil {
		return Key{}, 0, fmt.Errorf("session: %w", err)
	}
	// As for key tokens: the index finds the row, a constant-time
	// comparison decides.
	if subtle.ConstantTimeCompare(stored, h[:]) != 1 {
		return Key{}, 0, ErrNotFound
	}
	return k, version, nil
}

// DeleteSession ends the session whose id hashes to h; ending one that
// does not exist (any more) is no error.
func (db *DB) DeleteSession(ctx context.Context, h TokenHash) error {
	if _, err := db.w.ExecContext(ctx, `DELETE FROM console_sessions WHERE id_hash = ?`, h[:]); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}
