package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
)

// BackupTo writes a consistent copy of the database to dst (a new or
// empty file) with VACUUM INTO. It runs in one read transaction, so the
// copy is the database as of one commit — every message acknowledged
// before it began, none half-stored — and it runs beside the writer, in
// this process or another, without stopping ingest. The copy is compact
// and in rollback-journal mode; inboxd turns it back to WAL when it opens
// it. It takes a connection of its own: the read pool's are query-only,
// which VACUUM INTO refuses, and the writer's would stall ingest for as
// long as the copy takes. BackupTo neither syncs nor verifies dst: see
// CheckBackup.
func (db *DB) BackupTo(ctx context.Context, dst string) error {
	c, err := sql.Open("sqlite", db.url+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// TableRows is a table of a database and how many rows it holds.
type TableRows struct {
	Table string
	Rows  int64
}

// CheckBackup opens the database file at path read-only, runs PRAGMA
// quick_check and counts the rows of every table, FTS shadow tables
// aside. A file that fails the check is an error naming the first
// problem SQLite found.
func CheckBackup(ctx context.Context, path string) ([]TableRows, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := (&url.URL{Scheme: "file", OmitHost: true, Path: abs}).String() + "?mode=ro&_pragma=busy_timeout(10000)"
	c, err := sql.Open("sqlite", u)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var check string
	if err := c.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check); err != nil {
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	if check != "ok" {
		return nil, fmt.Errorf("check %s: quick_check: %s", path, check)
	}
	// A virtual table's shadow tables are named after it (messages_fts_data, …).
	rows, err := c.QueryContext(ctx, `SELECT t.name FROM sqlite_schema t WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite\_%' ESCAPE '\'
		AND NOT EXISTS (SELECT 1 FROM sqlite_schema v WHERE v.type = 'table' AND v.sql LIKE 'CREATE VIRTUAL TABLE%'
			AND t.name LIKE v.name || '\_%' ESCAPE '\')
		ORDER BY t.name`)
	names, err := scanAll(rows, err, "list tables", func(r rowScanner) (n string, err error) { return n, r.Scan(&n) })
	if err != nil {
		return nil, err
	}
	out := make([]TableRows, len(names))
	for i, n := range names {
		out[i].Table = n
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM "`+n+`"`).Scan(&out[i].Rows); err != nil {
			return nil, fmt.Errorf("count %s: %w", n, err)
		}
	}
	return out, nil
}
