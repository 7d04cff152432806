package store

import (
	"context"
	"database/sql"
	"fmt"
)

// The hot statements of the write path are prepared once, when the
// database opens: parsing SQL was an eighth of the ingest CPU. They must be
// prepared before any transaction holds the single writer connection.
func (db *DB) prepareHot(ctx context.Context) error {
	for _, q := range hotQueries {
		s, err := db.w.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		db.stmts[q] = s
	}
	return nil
}

// exec runs query in tx, through its prepared statement when it has one.
func (db *DB) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if s, ok := db.stmts[query]; ok {
		return tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// queryRow runs a single-row query in tx, through its prepared statement
// when it has one.
func (db *DB) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if s, ok := db.stmts[query]; ok {
		return tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// query runs a query in tx, through its prepared statement when it has one.
func (db *DB) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if s, ok := db.stmts[query]; ok {
		return tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// readStmt returns query prepared on the read pool, preparing it on first
// use (database/sql re-prepares it per connection as needed). Preparing
// was a tenth of a thread page's CPU.
func (db *DB) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	db.readMu.RLock()
	s, ok := db.readStmts[query]
	db.readMu.RUnlock()
	if ok {
		return s, nil
	}
	db.readMu.Lock()
	defer db.readMu.Unlock()
	if s, ok := db.readStmts[query]; ok {
		return s, nil
	}
	s, err := db.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	db.readStmts[query] = s
	return s, nil
}

// readRow is QueryRowContext on the read pool through query's prepared
// statement.
func (db *DB) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := db.readStmt(ctx, query)
	if err != nil {
		return db.r.QueryRowContext(ctx, query, args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// readQuery is QueryContext on the read pool through query's prepared
// statement.
func (db *DB) readQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := db.readStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// rowScanner is a *sql.Row or *sql.Rows, as the scan functions take.
type rowScanner = interface{ Scan(...any) error }

// scanAll reads every row of a query with scan and closes rows; err is
// the query's own error, and what names the query in errors.
func scanAll[T any](rows *sql.Rows, err error, what string, scan func(rowScanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
