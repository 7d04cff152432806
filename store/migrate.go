package store

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inboxd/inboxd/message"
)

// A migration is SQL, run in one transaction with its version bump. Lines
// of the form "-- inboxd:…" are directives to the runner:
//
//	-- inboxd:foreign_keys off
//	    run with foreign keys off, as SQLite's procedure for rebuilding a
//	    table requires (dropping a parent table with them on first deletes
//	    every child row), and check them all before the commit;
//	-- inboxd:go NAME
//	    run the Go step NAME (migrationSteps) at this point;
//	-- inboxd:batched TABLE
//	…one statement, with ?1 and ?2…
//	-- inboxd:end
//	    run the statement once per range (?1, ?2] of TABLE's rowids,
//	    batchRows at a time, logging the progress: a copy of a million
//	    rows takes minutes, and the log says how far it is.
//
// Everything else runs as it is, in order.
type migrationPart struct {
	sql   string // plain SQL, or the batched statement
	table string // batched over this table's rowids
	step  string // a Go step
}

// migrationSteps are the Go steps migrations name.
var migrationSteps = map[string]func(ctx context.Context, db *DB, tx *sql.Tx) error{
	"pack-legacy-bodies": packLegacyBodies,
}

// batchRows is how many rowids one run of a batched statement covers.
var batchRows int64 = 50000

func parseMigration(body string) (parts []migrationPart, fkOff bool, err error) {
	var cur strings.Builder
	var batched string
	flush := func() {
		if strings.TrimSpace(cur.String()) != "" {
			parts = append(parts, migrationPart{sql: cur.String(), table: batched})
		}
		cur.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		d, ok := strings.CutPrefix(strings.TrimSpace(line), "-- inboxd:")
		if !ok {
			cur.WriteString(line)
			cur.WriteByte('\n')
			continue
		}
		verb, arg, _ := strings.Cut(d, " ")
		switch {
		case verb == "foreign_keys" && arg == "off":
			fkOff = true
		case verb == "go" && migrationSteps[arg] != nil:
			flush()
			parts = append(parts, migrationPart{step: arg})
		case verb == "batched" && arg != "" && batched == "":
			flush()
			batched = arg
		case verb == "end" && batched != "":
			flush()
			batched = ""
		default:
			return nil, false, fmt.Errorf("bad directive %q", line)
		}
	}
	if batched != "" {
		return nil, false, fmt.Errorf("batched statement over %s has no end", batched)
	}
	flush()
	return parts, fkOff, sc.Err()
}

// diskFree is freeBytes; tests replace it.
var diskFree = freeBytes

// applyMigration runs migration n. logged: say so in the log (not for a
// new database's first migrations).
func (db *DB) applyMigration(ctx context.Context, n int, name, body string, logged bool) error {
	parts, fkOff, err := parseMigration(body)
	if err != nil {
		return err
	}
	if err := db.checkRoomToCopy(parts); err != nil {
		return err
	}
	if fkOff {
		// PRAGMA foreign_keys is a no-op inside a transaction: it is set
		// on the writer's one connection around it.
		if _, err := db.w.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return err
		}
		defer db.w.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`)
	}
	start := time.Now()
	if logged {
		db.log.Warn("schema migration started; the server takes no traffic until done", "migration", name)
	}
	err = db.tx(ctx, func(tx *sql.Tx) error {
		for _, p := range parts {
			var err error
			switch {
			case p.step != "":
				err = migrationSteps[p.step](ctx, db, tx)
			case p.table != "":
				err = db.runBatched(ctx, tx, name, p, logged)
			default:
				_, err = tx.ExecContext(ctx, p.sql)
			}
			if err != nil {
				return err
			}
		}
		if fkOff {
			if err := checkForeignKeys(ctx, tx); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", n))
		return err
	})
	if err != nil {
		return err
	}
	if logged {
		db.log.Warn("schema migration done", "migration", name, "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// checkRoomToCopy refuses a migration that copies tables (a batched
// statement) when the disk has less free space than twice the database:
// the copies go to the WAL first (6.4 GB of it for a 7.7 GB database of a
// million messages), then into the file beside the old tables, whose
// pages are given back only afterwards. Refused, the database is as it
// was; SQLite would fail the same way, later, with "database or disk is
// full", and roll back.
func (db *DB) checkRoomToCopy(parts []migrationPart) error {
	if !slices.ContainsFunc(parts, func(p migrationPart) bool { return p.table != "" }) {
		return nil
	}
	var size int64
	for _, f := range []string{db.path, db.path + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			size += fi.Size()
		}
	}
	free, ok := diskFree(filepath.Dir(db.path))
	if !ok || free >= uint64(2*size) {
		return nil
	}
	mb := func(n uint64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB" }
	return fmt.Errorf("not enough disk space to migrate: the migration copies the database's tables and needs about %s free beside it, %s are free in %s (the migration changed nothing)",
		mb(uint64(2*size)), mb(free), filepath.Dir(db.path))
}

// runBatched runs a batched statement over every rowid range of its table.
func (db *DB) runBatched(ctx context.Context, tx *sql.Tx, name string, p migrationPart, logged bool) error {
	var lo, hi, total int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(min(rowid), 1) - 1, coalesce(max(rowid), 0), count(*) FROM "`+p.table+`"`).
		Scan(&lo, &hi, &total); err != nil {
		return fmt.Errorf("batch over %s: %w", p.table, err)
	}
	st, err := tx.PrepareContext(ctx, p.sql)
	if err != nil {
		return err
	}
	defer st.Close()
	var done int64
	last := time.Now()
	for from := lo; from < hi; from += batchRows {
		res, err := st.ExecContext(ctx, from, min(from+batchRows, hi))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		done += n
		if logged && (time.Since(last) >= 5*time.Second || from+batchRows >= hi) {
			db.log.Warn("schema migration", "migration", name, "copy", copyTarget(p.sql), "rows_of_"+p.table, done, "of", total)
			last = time.Now()
		}
	}
	return nil
}

// copyTarget names the table a batched INSERT fills, for the log.
func copyTarget(stmt string) string {
	f := strings.Fields(stmt)
	for i := 0; i+2 < len(f); i++ {
		if strings.EqualFold(f[i], "INSERT") && strings.EqualFold(f[i+1], "INTO") {
			return f[i+2]
		}
	}
	return ""
}

// checkForeignKeys fails if any row references a row that is not there.
func checkForeignKeys(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fk int
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return err
		}
		return fmt.Errorf("foreign key check: %s row %d references a missing %s row", table, rowid.Int64, parent)
	}
	return rows.Err()
}

// packLegacyBodies packs the bodies stored before migration 0007 (plain
// text, html and extracted_text, no packed).
func packLegacyBodies(ctx context.Context, db *DB, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT message_id, text, html, coalesce(extracted_text, '') FROM bodies WHERE packed IS NULL`)
	type legacy struct {
		id         string
		text, html sql.NullString
		m          message.Parsed
	}
	list, err := scanAll(rows, err, "legacy bodies", func(r rowScanner) (l legacy, err error) {
		err = r.Scan(&l.id, &l.text, &l.html, &l.m.ExtractedText)
		l.m.Text, l.m.HasText = l.text.String, l.text.Valid
		l.m.HTML, l.m.HasHTML = l.html.String, l.html.Valid
		return l, err
	})
	if err != nil {
		return err
	}
	for _, l := range list {
		packed := db.bodies.pack(&l.m)
		if _, err := tx.ExecContext(ctx, `UPDATE bodies SET packed = ?, text = NULL, html = NULL, extracted_text = NULL
			WHERE message_id = ?`, packed, l.id); err != nil {
			return fmt.Errorf("pack body of %s: %w", l.id, err)
		}
	}
	return nil
}
