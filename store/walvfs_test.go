package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
	// A commit of one page: its frame's header and page in one write.
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE one_page (k INTEGER PRIMARY KEY, v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO one_page VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	before = writeSyscalls(t)
	for range 20 {
		if _, err := db.w.ExecContext(ctx, `UPDATE one_page SET v = v + 1 WHERE k = 1`); err != nil {
			t.Fatal(err)
		}
	}
	if writes := writeSyscalls(t) - before; writes > 25 {
		t.Errorf("20 one-page commits made %d write calls, want about 20", writes)
	}
}

// TestWALGatherKeepsEveryCommit drives the VFS where SQLite leans on it:
// transactions larger than the page cache (frames spilled and later read
// back and overwritten before the commit), rolled back after a spill, a
// reader on the plain VFS reading while commits land, and a copy of the
// files taken as a crash would leave them (no checkpoint, the process
// still running), which SQLite must recover from the WAL file alone.
func TestWALGatherKeepsEveryCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gather.db")
	w := openGathered(t, path)
	r := openPlain(t, path, "_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	ctx := context.Background()
	mustExec(t, w, `PRAGMA wal_autocheckpoint(0)`) // the crash copy below finds it all in the WAL
	mustExec(t, w, `CREATE TABLE t (k INTEGER PRIMARY KEY, tx INTEGER, b BLOB)`)

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
	c := openPlain(t, filepath.Join(crash, "gather.db"), "")
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

// openGathered opens path through walVFS as the writer does, with a page
// cache of 8 pages so that a transaction of a few rows spills frames.
func openGathered(t *testing.T, path string) *sql.DB {
	t.Helper()
	if err := registerWALVFS(); err != nil {
		t.Fatal(err)
	}
	w, err := sql.Open("sqlite", fileURL(path)+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=cache_size(8)&_pragma=busy_timeout(10000)&_txlock=immediate&vfs="+walVFSName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	w.SetMaxOpenConns(1)
	return w
}

// openPlain opens path through SQLite's own VFS with the DSN params;
// cleanup closes it.
func openPlain(t *testing.T, path, params string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", fileURL(path)+"?"+params)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fileURL is path as the file: URL SQLite opens.
func fileURL(path string) string {
	return (&url.URL{Scheme: "file", OmitHost: true, Path: path}).String()
}

// mustExec runs q on db or ends the test.
func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatal(q, err)
	}
}

// blobRows checks that table holds want rows, row k's blob being k's byte
// repeated, and that the database is whole.
func blobRows(t *testing.T, db *sql.DB, table string, want int) {
	t.Helper()
	ctx := context.Background()
	var ok string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check = %q, %v", ok, err)
	}
	rows, err := db.QueryContext(ctx, `SELECT k, b FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for ; rows.Next(); n++ {
		var k int
		var b []byte
		if err := rows.Scan(&k, &b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, bytes.Repeat([]byte{byte(k)}, len(b))) || len(b) < 1000 {
			t.Errorf("%s row %d damaged", table, k)
		}
	}
	if err := rows.Err(); err != nil || n != want {
		t.Fatalf("%s: %d rows (%v), want %d", table, n, err, want)
	}
}

// TestWALRunEndsWithTheWriteLock: frames a transaction spilled and then
// rolled back are never written after it lets go of the write lock, where
// they would land on what another writer (here a second connection, in
// production the CLI's process) committed meanwhile at the same offsets.
func TestWALRunEndsWithTheWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock.db")
	ctx := context.Background()
	w := openGathered(t, path)
	other := openPlain(t, path, "_pragma=busy_timeout(10000)&_txlock=immediate")
	mustExec(t, w, `CREATE TABLE t (k INTEGER PRIMARY KEY, b BLOB)`)
	mustExec(t, w, `CREATE TABLE o (k INTEGER PRIMARY KEY, b BLOB)`)
	for i := range 20 {
		mustExec(t, w, `INSERT INTO t VALUES (?, ?)`, i, bytes.Repeat([]byte{byte(i)}, 3000))
	}
	mustExec(t, w, `PRAGMA wal_checkpoint(PASSIVE)`)
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 160; i++ { // spills
		if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?, ?)`, i, bytes.Repeat([]byte{0xEE}, 3000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		mustExec(t, other, `INSERT INTO o VALUES (?, ?)`, i, bytes.Repeat([]byte{byte(i)}, 3000))
	}
	mustExec(t, w, `INSERT INTO t VALUES (200, ?)`, bytes.Repeat([]byte{200}, 3000)) // reads the WAL
	blobRows(t, other, "o", 10)
	blobRows(t, other, "t", 21)
}

// TestWALFailedWriteLosesNothing: a write of the run that fails (the file
// may grow no further) surfaces at the read of a spilled page that made
// the run go to the file, and nothing is lost: SQLite either rolls the
// transaction back or, the file growing again, commits it with every
// frame it spilled; either way the database is whole and holds what was
// committed. The limit is RLIMIT_FSIZE (EFBIG, an I/O error), set in a
// child process since it is process-wide. (A full disk, ENOSPC, was
// checked by hand on a tmpfs: the statement fails with SQLITE_FULL alone,
// the transaction goes on and commits whole.)
func TestWALFailedWriteLosesNothing(t *testing.T) {
	if os.Getenv("INBOXD_TEST_FSIZE_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWALFailedWriteLosesNothing$", "-test.count=1")
		cmd.Env = append(os.Environ(), "INBOXD_TEST_FSIZE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("ok: recommitted")) {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "full.db")
	ctx := context.Background()
	w := openGathered(t, path)
	if _, err := w.ExecContext(ctx, `PRAGMA wal_autocheckpoint(0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY, u INTEGER UNIQUE NOT NULL, b BLOB)`); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := w.ExecContext(ctx, `INSERT INTO t VALUES (?, ?, ?)`, i, i, bytes.Repeat([]byte{byte(i)}, 3000)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	setLimit := func(n uint64) {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: lim.Max}); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 160; i++ {
		if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?, ?, ?)`, i, i, bytes.Repeat([]byte{byte(i)}, 3000)); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else {
		setLimit(uint64(st.Size())) // the WAL is empty: its frames cannot be written
	}
	// A statement with a statement journal that reads a spilled page.
	if _, err := tx.ExecContext(ctx, `INSERT INTO t (u, b) SELECT u + 100000, b FROM t WHERE k = 100`); err == nil {
		t.Fatal("the read of a spilled page did not fail with the WAL unwritable")
	}
	setLimit(lim.Cur)
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (200, 200, ?)`, bytes.Repeat([]byte{200}, 3000)); err != nil {
		t.Fatal(err)
	}
	want := 20 + 60 + 1
	if err := tx.Commit(); err != nil {
		if !strings.Contains(err.Error(), "no transaction is active") {
			t.Fatalf("commit: %v", err)
		}
		want = 20 + 1 // SQLite rolled the transaction back; row 200 was a statement of its own
	}
	if _, err := w.ExecContext(ctx, `INSERT INTO t VALUES (300, 300, ?)`, bytes.Repeat([]byte{44}, 3000)); err != nil {
		t.Fatalf("a commit after the file may grow again: %v", err)
	}
	r := openPlain(t, path, "_pragma=query_only(1)")
	blobRows(t, r, "t", want+1)
	fmt.Println("ok: recommitted")
}

// TestWALFullDiskLosesNothing is TestWALFailedWriteLosesNothing on a full
// disk (ENOSPC, SQLITE_FULL), where SQLite fails the statement that read
// the spilled page alone and the transaction goes on: its commit, once
// there is room again, must hold every frame it spilled. The disk is an
// 8 MB tmpfs in a mount namespace of the child's own (unshare, as root;
// the mount goes with the child).
func TestWALFullDiskLosesNothing(t *testing.T) {
	dir, child := onSmallTmpfs(t)
	if !child {
		return
	}
	path := filepath.Join(dir, "full.db")
	ctx := context.Background()
	w := openGathered(t, path)
	mustExec(t, w, `PRAGMA wal_autocheckpoint(0)`)
	mustExec(t, w, `CREATE TABLE t (k INTEGER PRIMARY KEY, u INTEGER UNIQUE NOT NULL, b BLOB)`)
	for i := range 20 {
		mustExec(t, w, `INSERT INTO t VALUES (?, ?, ?)`, i, i, bytes.Repeat([]byte{byte(i)}, 3000))
	}
	mustExec(t, w, `PRAGMA wal_checkpoint(TRUNCATE)`)
	filler := fillDisk(t, dir, 64<<10) // the spilled frames stay in the run
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 160; i++ {
		if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?, ?, ?)`, i, i, bytes.Repeat([]byte{byte(i)}, 3000)); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t (u, b) SELECT u + 100000, b FROM t WHERE k = 100`); err == nil {
		t.Fatal("the read of a spilled page did not fail on the full disk")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (200, 200, ?)`, bytes.Repeat([]byte{200}, 3000)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := openPlain(t, path, "_pragma=query_only(1)")
	blobRows(t, r, "t", 81)
	fmt.Println("ok: child passed")
}

// onSmallTmpfs runs the calling test again in a child process, in a mount
// namespace of its own (unshare, as root) with an 8 MB tmpfs, and reports
// whether it is that child, with the tmpfs's directory; the parent checks
// the child passed (it prints "ok: child passed"), or skips where unshare
// is refused. The mount goes with the child.
func onSmallTmpfs(t *testing.T) (dir string, child bool) {
	t.Helper()
	if dir := os.Getenv("INBOXD_TEST_TMPFS"); dir != "" {
		return dir, true
	}
	dir = t.TempDir()
	script := `mount -t tmpfs -o size=8m tmpfs "$INBOXD_TEST_TMPFS" && exec "$0" -test.run="^$1\$" -test.count=1 -test.v`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, os.Args[0], t.Name())
	cmd.Env = append(os.Environ(), "INBOXD_TEST_TMPFS="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("unshare failed")) || errors.Is(err, exec.ErrNotFound) {
		t.Skipf("needs unshare and root for a tmpfs of its own: %v %s", err, out)
	}
	if err != nil || !bytes.Contains(out, []byte("ok: child passed")) {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return dir, false
}

// fillDisk fills dir's file system but for leave bytes; the file goes at
// the end of the test.
func fillDisk(t *testing.T, dir string, leave int64) (name string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	page := make([]byte, 4096)
	for n := int64(0); n < int64(st.Bavail)*st.Bsize-leave; n += 4096 {
		if _, err := f.Write(page); err != nil {
			break
		}
	}
	return f.Name()
}

// TestWALCommitWithoutSyncOnFullDisk: a writer through walVFS without a
// sync at every commit (synchronous=NORMAL) on a full disk has its commit
// fail, as SQLite's own VFS does, instead of publishing frames that could
// not be written.
func TestWALCommitWithoutSyncOnFullDisk(t *testing.T) {
	dir, child := onSmallTmpfs(t)
	if !child {
		return
	}
	path := filepath.Join(dir, "normal.db")
	ctx := context.Background()
	w := openGathered(t, path)
	for _, q := range []string{`PRAGMA synchronous=NORMAL`, `PRAGMA wal_autocheckpoint(0)`, `CREATE TABLE t (k INTEGER PRIMARY KEY, b BLOB)`} {
		if _, err := w.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	for i := range 5 {
		if _, err := w.ExecContext(ctx, `INSERT INTO t VALUES (?, ?)`, i, bytes.Repeat([]byte{byte(i)}, 3000)); err != nil {
			t.Fatal(err)
		}
	}
	filler := fillDisk(t, dir, 0)
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 100; i < 104; i++ { // fits the cache: nothing spilled, the frames go at the commit
		if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?, ?)`, i, bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	err = tx.Commit()
	if err == nil {
		t.Error("a commit whose frames could not be written succeeded")
	}
	os.Remove(filler)
	if _, err := w.ExecContext(ctx, `INSERT INTO t VALUES (500, ?)`, bytes.Repeat([]byte{0xF4}, 3000)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	r := openPlain(t, path, "_pragma=query_only(1)")
	blobRows(t, r, "t", 6)
	fmt.Println("ok: child passed")
}

// TestWALTwoConnectionsOneProcess: two connections through walVFS on one
// database (the tests' store beside an in-process server): one's reads
// pass barriers while the other gathers its commits, and neither touches
// the other's run.
func TestWALTwoConnectionsOneProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.db")
	ctx := context.Background()
	w := openGathered(t, path)
	r := openGathered(t, path)
	if _, err := w.ExecContext(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY, b BLOB)`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int
			if err := r.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
				readErr = err
				return
			}
		}
	})
	k := 0
	for range 40 {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 30 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (?, ?)`, k, bytes.Repeat([]byte{byte(k)}, 3000)); err != nil {
				t.Fatal(err)
			}
			k++
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	blobRows(t, r, "t", k)
}

// TestWALRunWrittenBeforePublishing: a writer through walVFS that runs
// without a sync at every commit (synchronous=NORMAL set by hand) still
// has each commit's frames on the file before another connection can see
// the commit.
func TestWALRunWrittenBeforePublishing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "normal.db")
	ctx := context.Background()
	w := openGathered(t, path)
	r := openPlain(t, path, "_pragma=query_only(1)")
	for _, q := range []string{`PRAGMA synchronous=NORMAL`, `CREATE TABLE t (k INTEGER PRIMARY KEY, b BLOB)`} {
		if _, err := w.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	for i := range 30 {
		if _, err := w.ExecContext(ctx, `INSERT INTO t VALUES (?, ?)`, i, bytes.Repeat([]byte{byte(i)}, 3000)); err != nil {
			t.Fatal(err)
		}
		blobRows(t, r, "t", i+1)
	}
}
