package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// writeSyscalls is the process's count of write system calls so far
// (Linux's /proc/self/io), the figure the gathering exists to lower.
func writeSyscalls(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io to count write calls with: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "syscw: "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no syscw in /proc/self/io")
	return 0
}

// TestWALCommitIsGathered: the writer's commit of ~60 pages goes to its WAL
// in a couple of writes, not the two per page SQLite makes.
func TestWALCommitIsGathered(t *testing.T) {
	db, _ := openTest(t)
	ctx := context.Background()
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE gather_probe (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 60 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO gather_probe VALUES (randomblob(3000))`); err != nil {
			t.Fatal(err)
		}
	}
	before := writeSyscalls(t)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	writes := writeSyscalls(t) - before
	// 60 rows of a page each: without the gathering 120+ writes.
	if writes > 10 {
		t.Errorf("commit of ~60 pages made %d write calls, want a few", writes)
	}
}

// TestWALGatherKeepsEveryCommit drives the VFS where SQLite leans on it:
// transactions larger than the page cache (frames spilled and later read
// back and overwritten before the commit), rolled back after a spill, a
// reader on the plain VFS reading while commits land, and a copy of the
// files taken as a crash would leave them (no checkpoint, the process
// still running), which SQLite must recover from the WAL file alone.
func TestWALGatherKeepsEveryCommit(t *testing.T) {
	if err := registerWALVFS(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "gather.db")
	base := (&url.URL{Scheme: "file", OmitHost: true, Path: path}).String()
	w, err := sql.Open("sqlite", base+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=cache_size(8)&_pragma=wal_autocheckpoint(0)&_pragma=busy_timeout(10000)&vfs="+walVFSName)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", base+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if _, err := w.ExecContext(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY, tx INTEGER, b BLOB)`); err != nil {
		t.Fatal(err)
	}

	// The reader checks every snapshot it sees: transaction n adds rows
	// n*1000 … n*1000+199, each with a blob of k's bytes.
	stop := make(chan struct{})
	var readErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := checkSnapshot(ctx, r); err != nil {
				readErr = err
				return
			}
		}
	})

	row := func(tx *sql.Tx, n, i int) error {
		k := n*1000 + i
		_, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?, ?, ?)`, k, n, bytes.Repeat([]byte{byte(k)}, 1500))
		return err
	}
	for n := 1; n <= 12; n++ {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if err := row(tx, n, i); err != nil {
				t.Fatal(err)
			}
		}
		// Rewrite rows already spilled: their pages come back from the
		// WAL and their frames are overwritten in place.
		if _, err := tx.ExecContext(ctx, `UPDATE t SET b = b WHERE tx = ? AND k % 7 = 0`, n); err != nil {
			t.Fatal(err)
		}
		if n%4 == 0 {
			// A spilled transaction rolled back: its frames are never
			// committed, and the next transaction writes over them.
			for i := range 200 {
				if err := row(tx, n+100, i); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Fatalf("a reader saw: %v", readErr)
	}

	// The files as a crash leaves them: the database file has only the
	// schema (no checkpoint ran), the rest is in the WAL.
	crash := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crash, "gather.db"+suffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := sql.Open("sqlite", (&url.URL{Scheme: "file", OmitHost: true, Path: filepath.Join(crash, "gather.db")}).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for name, db := range map[string]*sql.DB{"the reader": r, "the recovered copy": c} {
		var ok string
		if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("%s: integrity_check = %q, %v", name, ok, err)
		}
		if err := checkSnapshot(ctx, db); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var txs int
		if err := db.QueryRowContext(ctx, `SELECT count(DISTINCT tx) FROM t`).Scan(&txs); err != nil || txs != 9 {
			t.Fatalf("%s: %d transactions stored, want the 9 committed (%v)", name, txs, err)
		}
	}
}

// checkSnapshot checks what TestWALGatherKeepsEveryCommit's transactions
// wrote, as one snapshot: only whole committed transactions (200 rows
// each, none from a rolled-back one), every blob intact.
func checkSnapshot(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT k, tx, b FROM t`)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return nil
		}
		return err
	}
	defer rows.Close()
	perTx := map[int]int{}
	for rows.Next() {
		var k, n int
		var b []byte
		if err := rows.Scan(&k, &n, &b); err != nil {
			return err
		}
		if k/1000 != n || n%4 == 0 || n > 100 {
			return fmt.Errorf("row %d of transaction %d, which never committed", k, n)
		}
		if !bytes.Equal(b, bytes.Repeat([]byte{byte(k)}, 1500)) {
			return fmt.Errorf("row %d: blob damaged", k)
		}
		perTx[n]++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for n, c := range perTx {
		if c != 200 {
			return fmt.Errorf("transaction %d: %d of its 200 rows", n, c)
		}
	}
	return nil
}
