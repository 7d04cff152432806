package store

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// Project is a tenant.
type Project struct {
	ID        string
	Name      string
	CreatedAt time.Time
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

// Inbox is one address on this gateway.
type Inbox struct {
	ID             string
	ProjectID      string
	Address        string
	DisplayName    string
	Environment    string
	SendPolicy     string
	AllowedDomains []string
	CreatedAt      time.Time
	// DeferredCount is how many inbound messages the deferred parent
	// lookup holds for the inbox (SPEC §4: held mail is visible).
	DeferredCount int64
}

// NewInbox is the input of CreateInbox.
type NewInbox struct {
	Address        string
	DisplayName    string
	Environment    string // "live" when empty
	SendPolicy     string // "allow" when empty
	AllowedDomains []string
}

// Bootstrapped describes what Bootstrap created on a first start.
type Bootstrapped struct {
	ProjectID  string
	AdminKey   Key
	AdminToken string
	Inbox      Inbox
}

// Bootstrap creates the first project, an admin key with every scope and
// the inbox inbox@localhost, all in one transaction, when the database has
// no project yet. It returns created=false on every later start.
func (db *DB) Bootstrap(ctx context.Context) (b Bootstrapped, created bool, err error) {
	err = db.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM projects`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		created = true
		b.ProjectID = db.newID("prj_")
		if _, err := tx.ExecContext(ctx, `INSERT INTO projects (id, name, created_at) VALUES (?, 'default', ?)`,
			b.ProjectID, ms(db.now())); err != nil {
			return err
		}
		if b.AdminKey, b.AdminToken, err = db.insertKey(ctx, tx, b.ProjectID, "admin", AllScopes(), nil); err != nil {
			return err
		}
		b.Inbox, err = db.insertInbox(ctx, tx, b.ProjectID, NewInbox{Address: "inbox@localhost"})
		return err
	})
	if err != nil {
		return Bootstrapped{}, false, fmt.Errorf("bootstrap: %w", err)
	}
	return b, created, nil
}

// DefaultProject returns the oldest project (the one made on first start).
func (db *DB) DefaultProject(ctx context.Context) (Project, error) {
	var p Project
	var created int64
	err := db.r.QueryRowContext(ctx, `SELECT id, name, created_at FROM projects ORDER BY created_at, id LIMIT 1`).
		Scan(&p.ID, &p.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, fmt.Errorf("default project: %w", ErrNotFound)
	}
	if err != nil {
		return Project{}, fmt.Errorf("default project: %w", err)
	}
	p.CreatedAt = fromMS(created)
	return p, nil
}

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

// CreateInbox creates an inbox; an address already in use is ErrConflict.
func (db *DB) CreateInbox(ctx context.Context, projectID string, in NewInbox) (Inbox, error) {
	var ib Inbox
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		ib, err = db.insertInbox(ctx, tx, projectID, in)
		return err
	})
	if err != nil {
		return Inbox{}, fmt.Errorf("create inbox: %w", err)
	}
	return ib, nil
}

func (db *DB) insertInbox(ctx context.Context, tx *sql.Tx, projectID string, in NewInbox) (Inbox, error) {
	ib := Inbox{
		ID: db.newID("ibx_"), ProjectID: projectID, Address: strings.ToLower(in.Address),
		DisplayName: in.DisplayName, Environment: in.Environment, SendPolicy: in.SendPolicy,
		AllowedDomains: in.AllowedDomains, CreatedAt: db.now().UTC().Truncate(time.Millisecond),
	}
	if ib.Environment == "" {
		ib.Environment = "live"
	}
	if ib.SendPolicy == "" {
		ib.SendPolicy = "allow"
	}
	if ib.AllowedDomains == nil {
		ib.AllowedDomains = []string{}
	}
	domains, _ := json.Marshal(ib.AllowedDomains)
	_, err := tx.ExecContext(ctx, `INSERT INTO inboxes (id, project_id, address, display_name, environment, send_policy, allowed_domains, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		ib.ID, projectID, ib.Address, ib.DisplayName, ib.Environment, ib.SendPolicy, string(domains), ms(ib.CreatedAt))
	if isConstraint(err) {
		return Inbox{}, fmt.Errorf("inbox %s: %w", ib.Address, ErrConflict)
	}
	if err != nil {
		return Inbox{}, fmt.Errorf("insert inbox: %w", err)
	}
	return ib, nil
}

const inboxColumns = `id, project_id, address, display_name, environment, send_policy, allowed_domains, created_at,
	(SELECT count(*) FROM deferred_messages d WHERE d.inbox_id = inboxes.id) AS deferred_count`

func scanInbox(row rowScanner) (Inbox, error) {
	var sc inboxScan
	if err := row.Scan(sc.dest()...); err != nil {
		return Inbox{}, err
	}
	return sc.inbox()
}

// inboxScan holds the inboxColumns of a row while it is scanned.
type inboxScan struct {
	ib      Inbox
	domains string
	created int64
}

func (sc *inboxScan) dest() []any {
	ib := &sc.ib
	return []any{&ib.ID, &ib.ProjectID, &ib.Address, &ib.DisplayName, &ib.Environment, &ib.SendPolicy, &sc.domains, &sc.created,
		&ib.DeferredCount}
}

func (sc *inboxScan) inbox() (Inbox, error) {
	ib := sc.ib
	if err := json.Unmarshal([]byte(sc.domains), &ib.AllowedDomains); err != nil {
		return Inbox{}, fmt.Errorf("inbox %s allowed_domains: %w", ib.ID, err)
	}
	ib.CreatedAt = fromMS(sc.created)
	return ib, nil
}

// ListInboxes returns the project's inboxes, oldest first.
func (db *DB) ListInboxes(ctx context.Context, projectID string) ([]Inbox, error) {
	return db.InboxesAfter(ctx, projectID, nil, -1)
}

// InboxesAfter returns up to limit (−1: every) inboxes of the project,
// oldest first, strictly after the position after.
func (db *DB) InboxesAfter(ctx context.Context, projectID string, after *TimeKey, limit int) ([]Inbox, error) {
	page, args := createdPage(after, limit, projectID)
	rows, err := db.r.QueryContext(ctx, `SELECT `+inboxColumns+` FROM inboxes WHERE project_id = ?`+page, args...)
	return scanAll(rows, err, "list inboxes", scanInbox)
}

// InboxByAddress finds an inbox by its address, case-insensitively.
func (db *DB) InboxByAddress(ctx context.Context, address string) (Inbox, error) {
	ib, err := scanInbox(db.readRow(ctx, `SELECT `+inboxColumns+` FROM inboxes WHERE address = ?`, address))
	if errors.Is(err, sql.ErrNoRows) {
		return Inbox{}, fmt.Errorf("inbox %s: %w", address, ErrNotFound)
	}
	if err != nil {
		return Inbox{}, fmt.Errorf("inbox by address: %w", err)
	}
	return ib, nil
}

// DeleteInbox deletes an inbox and, through ON DELETE CASCADE, all its data.
func (db *DB) DeleteInbox(ctx context.Context, projectID, inboxID string) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		// The contentless FTS table has no foreign key: clear it first.
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages_fts WHERE rowid IN (SELECT rowid FROM messages WHERE inbox_id = ?)
			AND rowid <= (SELECT indexed_through FROM search_index)`, inboxID); err != nil {
			return fmt.Errorf("delete inbox search rows: %w", err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM inboxes WHERE id = ? AND project_id = ?`, inboxID, projectID)
		if err != nil {
			return fmt.Errorf("delete inbox: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("delete inbox %s: %w", inboxID, ErrNotFound)
		}
		// New messages may now reuse the highest rowids (max(rowid) + 1):
		// the mark must stay below them, or they would never be indexed.
		_, err = tx.ExecContext(ctx, `UPDATE search_index SET indexed_through = min(indexed_through, (SELECT coalesce(max(rowid), 0) FROM messages))`)
		return err
	})
}
