package store

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// AllScopes lists every API key scope (SPEC §5.1).
func AllScopes() []string {
	return []string{
		"inboxes:read", "inboxes:write", "threads:read", "messages:read", "messages:send",
		"messages:raw", "messages:delete", "approvals:read", "approvals:write", "events:read",
		"webhooks:read", "webhooks:write", "keys:write", "test:write",
	}
}

// ReadOnlyScopes is the read-only scope set of SPEC §5.1.
func ReadOnlyScopes() []string {
	return []string{"inboxes:read", "threads:read", "messages:read", "approvals:read", "events:read"}
}

// Key is an API key as stored (never the token).
type Key struct {
	ID          string
	ProjectID   string
	Name        string
	Scopes      []string
	InboxIDs    []string // nil = every inbox of the project
	TokenPrefix string
	CreatedAt   time.Time
	LastUsedAt  *time.Time
}

// Has reports whether the key carries scope.
func (k Key) Has(scope string) bool { return slices.Contains(k.Scopes, scope) }

// CreateKey creates an API key and returns it with its token, which is
// shown once and never stored.
func (db *DB) CreateKey(ctx context.Context, projectID, name string, scopes, inboxIDs []string) (k Key, token string, err error) {
	for _, s := range scopes {
		if !slices.Contains(AllScopes(), s) {
			return Key{}, "", fmt.Errorf("unknown scope %q", s)
		}
	}
	err = db.tx(ctx, func(tx *sql.Tx) error {
		for _, id := range inboxIDs {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM inboxes WHERE id = ? AND project_id = ?`, id, projectID).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("inbox %s: %w", id, ErrNotFound)
			}
		}
		k, token, err = db.insertKey(ctx, tx, projectID, name, scopes, inboxIDs)
		return err
	})
	if err != nil {
		return Key{}, "", fmt.Errorf("create key: %w", err)
	}
	return k, token, nil
}

func (db *DB) insertKey(ctx context.Context, tx *sql.Tx, projectID, name string, scopes, inboxIDs []string) (Key, string, error) {
	token := "inboxd_" + db.randomToken(24)
	k := Key{
		ID: db.newID("key_"), ProjectID: projectID, Name: name,
		Scopes: slices.Clone(scopes), InboxIDs: inboxIDs,
		TokenPrefix: token[:14], CreatedAt: db.now().UTC().Truncate(time.Millisecond),
	}
	var inboxes any
	if inboxIDs != nil {
		b, _ := json.Marshal(inboxIDs)
		inboxes = string(b)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, project_id, name, token_hash, token_prefix, scopes, inbox_ids, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, projectID, name, sha([]byte(token)), k.TokenPrefix, strings.Join(scopes, " "), inboxes, ms(k.CreatedAt))
	if err != nil {
		return Key{}, "", fmt.Errorf("insert key: %w", err)
	}
	return k, token, nil
}

const keyColumns = `id, project_id, name, scopes, inbox_ids, token_prefix, created_at, last_used_at`

// scanKey reads keyColumns, then any extra columns into extra.
func scanKey(row rowScanner, extra ...any) (Key, error) {
	var k Key
	var scopes string
	var inboxes sql.NullString
	var created int64
	var used sql.NullInt64
	if err := row.Scan(append([]any{&k.ID, &k.ProjectID, &k.Name, &scopes, &inboxes, &k.TokenPrefix, &created, &used}, extra...)...); err != nil {
		return Key{}, err
	}
	k.Scopes = strings.Fields(scopes)
	if inboxes.Valid {
		if err := json.Unmarshal([]byte(inboxes.String), &k.InboxIDs); err != nil {
			return Key{}, fmt.Errorf("key %s inbox list: %w", k.ID, err)
		}
		if k.InboxIDs == nil {
			k.InboxIDs = []string{}
		}
	}
	k.CreatedAt = fromMS(created)
	if used.Valid {
		t := fromMS(used.Int64)
		k.LastUsedAt = &t
	}
	return k, nil
}

// KeyByToken authenticates a bearer token. Unknown and revoked tokens are
// ErrNotFound.
func (db *DB) KeyByToken(ctx context.Context, token string) (Key, error) {
	return db.keyByHash(ctx, sha([]byte(token)))
}

func (db *DB) keyByHash(ctx context.Context, h []byte) (Key, error) {
	var stored []byte
	k, err := scanKey(db.readRow(ctx, `SELECT `+keyColumns+`, token_hash FROM api_keys WHERE token_hash = ? AND revoked_at IS NULL`, h), &stored)
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, ErrNotFound
	}
	if err != nil {
		return Key{}, fmt.Errorf("key by token: %w", err)
	}
	// The index lookup finds the row; the comparison that decides is
	// constant-time.
	if subtle.ConstantTimeCompare(stored, h) != 1 {
		return Key{}, ErrNotFound
	}
	return k, nil
}

// ListKeys returns the project's keys that are not revoked, oldest first.
func (db *DB) ListKeys(ctx context.Context, projectID string) ([]Key, error) {
	return db.KeysAfter(ctx, projectID, nil, -1)
}

// KeysAfter returns up to limit (−1: every) keys of the project that are
// not revoked, oldest first, strictly after the position after.
func (db *DB) KeysAfter(ctx context.Context, projectID string, after *TimeKey, limit int) ([]Key, error) {
	page, args := createdPage(after, limit, projectID)
	rows, err := db.r.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE project_id = ? AND revoked_at IS NULL`+page, args...)
	return scanAll(rows, err, "list keys", func(r rowScanner) (Key, error) { return scanKey(r) })
}

// GetKey returns a key of the project that is not revoked.
func (db *DB) GetKey(ctx context.Context, projectID, keyID string) (Key, error) {
	k, err := scanKey(db.readRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ? AND project_id = ? AND revoked_at IS NULL`, keyID, projectID))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, fmt.Errorf("key %s: %w", keyID, ErrNotFound)
	}
	if err != nil {
		return Key{}, fmt.Errorf("get key: %w", err)
	}
	return k, nil
}

// RevokeKey revokes a key; its token stops working at once.
func (db *DB) RevokeKey(ctx context.Context, projectID, keyID string) error {
	res, err := db.w.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND project_id = ? AND revoked_at IS NULL`,
		ms(db.now()), keyID, projectID)
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("revoke key %s: %w", keyID, ErrNotFound)
	}
	return nil
}

// TokenHash is the SHA-256 of an API key's token, the only form of it the
// store keeps. A transport that must check a key again later (an SMTP
// session, at every transaction) keeps this, never the token or the Key.
type TokenHash [sha256.Size]byte

// HashToken returns the hash of a bearer token.
func HashToken(token string) TokenHash { return sha256.Sum256([]byte(token)) }

// Authenticate returns the key whose token hashes to h (ErrNotFound for an
// unknown or revoked one) and the DataVersion it was checked at, so the
// caller may serve other values read at that version from its own caches.
// Every transport authenticates here, through one cache: a key found stays
// cached only while the version holds, so a revocation by any process (the
// API, the CLI) applies to the very next check.
func (db *DB) Authenticate(ctx context.Context, h TokenHash) (Key, int64, error) {
	version, err := db.DataVersion(ctx)
	if err != nil {
		return Key{}, 0, err
	}
	k, cached := db.keys.get(h, version)
	if !cached {
		if k, err = db.keyByHash(ctx, h[:]); err != nil {
			return Key{}, 0, err
		}
	}
	// Recording the use commits, which ends this version: the key is
	// cached by the next check, at the version that write made.
	if !db.noteKeyUse(ctx, k) && !cached {
		db.keys.put(h, version, k)
	}
	return k, version, nil
}

// keyUseInterval is how stale a key's last_used_at may get: a key in
// steady use costs one write per interval, not one per request.
const keyUseInterval = time.Minute

// noteKeyUse records that k was used now (SPEC §5.4 last_used_at) when
// the time it shows is more than keyUseInterval old. One request per key
// and interval writes it; a write that fails is logged and the request
// goes on, since a key's use is not worth refusing it for. It reports
// whether it wrote.
func (db *DB) noteKeyUse(ctx context.Context, k Key) bool {
	now := db.now()
	if k.LastUsedAt != nil && now.Sub(*k.LastUsedAt) < keyUseInterval {
		return false
	}
	at := ms(now)
	if prev, loaded := db.keyUses.LoadOrStore(k.ID, at); loaded {
		if at-prev.(int64) < keyUseInterval.Milliseconds() {
			return false // written lately, by this request's neighbours
		}
		if !db.keyUses.CompareAndSwap(k.ID, prev, at) {
			return false // another request of this key writes it
		}
	}
	if _, err := db.w.ExecContext(context.WithoutCancel(ctx), `UPDATE api_keys SET last_used_at = ?1 WHERE id = ?2 AND (last_used_at IS NULL OR last_used_at < ?1)`, at, k.ID); err != nil {
		db.log.Warn("record key use", "key", k.ID, "err", err)
	}
	return true
}

// maxCachedKeys bounds the key cache; only keys that exist are cached, so
// guessed tokens cannot fill it.
const maxCachedKeys = 4096

// keyCache holds the keys found at one DataVersion. Every key read at a
// version is right for as long as the version holds (versions are compared
// for equality, never ordered), so a lookup at another version empties the
// cache instead of checking entries one by one.
type keyCache struct {
	mu      sync.Mutex
	version int64
	keys    map[TokenHash]Key
}

func (c *keyCache) get(h TokenHash, version int64) (Key, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version {
		c.version, c.keys = version, nil
		return Key{}, false
	}
	k, ok := c.keys[h]
	return k, ok
}

// put caches k as read at version, unless the cache has moved to another
// version meanwhile.
func (c *keyCache) put(h TokenHash, version int64, k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version {
		return
	}
	if c.keys == nil || len(c.keys) >= maxCachedKeys {
		c.keys = map[TokenHash]Key{}
	}
	c.keys[h] = k
}
