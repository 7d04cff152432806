package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Project is a tenant.
type Project struct {
	ID        string
	Name      string
	CreatedAt time.Time
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
	return db.BootstrapWith(ctx, nil)
}

// BootstrapWith is Bootstrap that hands what it creates to keep (when not
// nil) before it commits: the admin token exists nowhere else, so a keep
// that cannot put it somewhere durable fails the bootstrap, and the next
// start makes another instead of finding a project whose key no one has.
func (db *DB) BootstrapWith(ctx context.Context, keep func(Bootstrapped) error) (b Bootstrapped, created bool, err error) {
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
		if b.Inbox, err = db.insertInbox(ctx, tx, b.ProjectID, NewInbox{Address: "inbox@localhost"}); err != nil {
			return err
		}
		if keep != nil {
			return keep(b)
		}
		return nil
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

// CursorSecret returns the server secret that signs list cursors, creating
// it on first use. It lives in the database so cursors survive restarts.
func (db *DB) CursorSecret(ctx context.Context) ([]byte, error) {
	var secret []byte
	err := db.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = 'cursor_secret'`).Scan(&secret)
	if err == nil {
		return secret, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("cursor secret: %w", err)
	}
	fresh := make([]byte, 32)
	db.readRand(fresh)
	err = db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ('cursor_secret', ?) ON CONFLICT DO NOTHING`, fresh); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = 'cursor_secret'`).Scan(&secret)
	})
	if err != nil {
		return nil, fmt.Errorf("cursor secret: %w", err)
	}
	return secret, nil
}
