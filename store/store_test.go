package store

import (
	"context"
	"errors"
	"flag"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inboxd/inboxd/message"
)

var update = flag.Bool("update", false, "rewrite golden files")

// openTest opens a store in a temp dir with its writer running; both stop
// when the test ends.
func openTest(t testing.TB) (*DB, Bootstrapped) {
	t.Helper()
	db, b, _ := openRunning(t, Options{Path: filepath.Join(t.TempDir(), "inboxd.db")})
	return db, b
}

// openIdle opens (bootstrapping) the database at path without running its
// writer: a process like the CLI, or a test that drives the writer's work
// itself. Cleanup closes it.
func openIdle(t testing.TB, path string) (*DB, Bootstrapped) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, Options{Path: path, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b, _, err := db.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return db, b
}

// openRunning opens (bootstrapping) the database of opts and runs its
// writer. stop ends Run and closes the database; cleanup calls it too.
func openRunning(t testing.TB, opts Options) (*DB, Bootstrapped, func()) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := db.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); db.Run(runCtx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			db.Close()
		})
	}
	t.Cleanup(stop)
	return db, b, stop
}

func incoming(inboxID, raw string) *Incoming {
	return &Incoming{
		Raw: []byte(raw), Trace: []byte("Received: test\r\n"), Parsed: message.Parse([]byte(raw)),
		Envelope: Envelope{MailFrom: "a@example.com", RcptTo: []string{"inbox@localhost"}, RemoteIP: "127.0.0.1", Helo: "test"},
		Targets:  []Target{{InboxID: inboxID}}, ReceivedAt: time.Now(),
	}
}

func TestSchemaGolden(t *testing.T) {
	db, _ := openTest(t)
	rows, err := db.r.Query(`SELECT type, name, coalesce(sql, '') FROM sqlite_master
		WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'messages_fts_%' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	v, err := db.SchemaVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "-- user_version = %d\n", v)
	for rows.Next() {
		var typ, name, sql string
		if err := rows.Scan(&typ, &name, &sql); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n-- %s %s\n%s;\n", typ, name, sql)
	}
	golden := filepath.Join("testdata", "schema.sql")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("schema changed; review and run go test ./store -run TestSchemaGolden -update\n%s", b.String())
	}
}

func TestReopenKeepsDataAndVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "inboxd.db")
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, created, err := db.Bootstrap(ctx); err != nil || !created {
		t.Fatal(created, err)
	}
	db.Close()
	db, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, created, err := db.Bootstrap(ctx); err != nil || created {
		t.Fatalf("second bootstrap created=%v err=%v", created, err)
	}
	v, err := db.SchemaVersion(ctx)
	if err != nil || v < 1 {
		t.Fatalf("version %d %v", v, err)
	}
}

// A database migrated by a newer inboxd is refused with a message that
// says so, and left as it was.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "inboxd.db")
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err := Open(ctx, Options{Path: path}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema (version %d) is newer than this inboxd's (%d)", v+1, v)) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("open a newer schema: %v", err)
	}
}

func TestKeys(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	k, err := db.KeyByToken(ctx, b.AdminToken)
	if err != nil || k.ID != b.AdminKey.ID || len(k.Scopes) != len(AllScopes()) {
		t.Fatalf("admin key: %+v %v", k, err)
	}
	if _, err := db.KeyByToken(ctx, b.AdminToken+"x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("wrong token: %v", err)
	}
	k2, tok, err := db.CreateKey(ctx, b.ProjectID, "agent", []string{"messages:read"}, []string{b.Inbox.ID})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.KeyByToken(ctx, tok)
	if err != nil || got.ID != k2.ID || len(got.InboxIDs) != 1 || got.Has("messages:send") {
		t.Fatalf("restricted key: %+v %v", got, err)
	}
	if _, _, err := db.CreateKey(ctx, b.ProjectID, "bad", []string{"root"}, nil); err == nil {
		t.Fatal("unknown scope accepted")
	}
	if _, _, err := db.CreateKey(ctx, b.ProjectID, "bad", []string{"messages:read"}, []string{"ibx_nope"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("foreign inbox: %v", err)
	}
	if err := db.RevokeKey(ctx, b.ProjectID, k2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.KeyByToken(ctx, tok); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoked key still works: %v", err)
	}
	// Only the hash is stored.
	var n int
	if err := db.r.QueryRow(`SELECT count(*) FROM api_keys WHERE instr(CAST(token_hash AS TEXT), ?) > 0 OR token_prefix = ?`, tok, tok).Scan(&n); err != nil || n != 0 {
		t.Fatalf("token stored in clear: %d %v", n, err)
	}
}

// An ingest whose target inbox was deleted after it was resolved is
// ErrNotFound; with other targets, they get their copy and the gone one is
// skipped.
func TestIngestIntoDeletedInbox(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	gone, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "gone@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteInbox(ctx, b.ProjectID, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest(ctx, incoming(gone.ID, "Subject: x\r\n\r\nx\r\n")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("only target gone: %v", err)
	}
	in := incoming(gone.ID, "Subject: y\r\n\r\ny\r\n")
	in.Targets = append(in.Targets, Target{InboxID: b.Inbox.ID})
	got, err := db.Ingest(ctx, in)
	if err != nil || len(got) != 1 || got[0].InboxID != b.Inbox.ID {
		t.Fatalf("one of two targets gone: %+v %v", got, err)
	}
}

func TestInboxes(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	if _, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "INBOX@localhost"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate address (case-insensitive): %v", err)
	}
	ib, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "Sales@Example.com", Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.InboxByAddress(ctx, "sales@EXAMPLE.com")
	if err != nil || got.ID != ib.ID || got.Environment != "test" {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	if _, err := db.Ingest(ctx, incoming(ib.ID, "Subject: x\r\n\r\nhello\r\n")); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteInbox(ctx, b.ProjectID, ib.ID); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"messages", "threads", "contents", "message_aliases"} {
		var n int
		if err := db.r.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s after inbox delete: %d rows (%v)", table, n, err)
		}
	}
	if err := db.DeleteInbox(ctx, b.ProjectID, ib.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestIngestStoresEverything(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	raw := "From: Ann <ann@example.com>\r\nTo: inbox@localhost\r\nMessage-ID: <p1@example.com>\r\nSubject: Plan\r\n\r\nLet's meet.\r\n"
	d, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw))
	if err != nil || len(d) != 1 || d[0].Sequence != 1 || d[0].Match != "new" {
		t.Fatalf("ingest: %+v %v", d, err)
	}
	gotRaw, err := db.Raw(ctx, d[0].MessageID)
	if err != nil || string(gotRaw) != "Received: test\r\n"+raw {
		t.Fatalf("raw = %q, %v", gotRaw, err)
	}
	m, err := db.GetMessage(ctx, b.Inbox.ID, d[0].MessageID)
	if err != nil {
		t.Fatal(err)
	}
	if m.RFCMessageID != "<p1@example.com>" || m.From == nil || m.From.Email != "ann@example.com" || m.Subject != "Plan" || m.Preview != "Let's meet." {
		t.Fatalf("message: %+v", m)
	}
	reply := "From: Bob <bob@example.com>\r\nMessage-ID: <r1@example.com>\r\nIn-Reply-To: <p1@example.com>\r\nSubject: Other subject\r\n\r\nYes.\r\n"
	d2, err := db.Ingest(ctx, incoming(b.Inbox.ID, reply))
	if err != nil || d2[0].ThreadID != d[0].ThreadID || d2[0].Sequence != 2 || d2[0].Match != "in_reply_to" {
		t.Fatalf("reply: %+v %v", d2, err)
	}
	// An SMTP retry of the same bytes is a duplicate: nothing stored.
	d3, err := db.Ingest(ctx, incoming(b.Inbox.ID, reply))
	if err != nil || !d3[0].Duplicate {
		t.Fatalf("retry: %+v %v", d3, err)
	}
	msgs, err := db.ThreadMessages(ctx, d[0].ThreadID)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("thread has %d messages (%v)", len(msgs), err)
	}
}

// A message without Message-ID gets a generated id from the store's random
// source, never from its bytes: the same id-less bytes twice are two
// messages (SPEC §3).
func TestIngestWithoutMessageIDIsNeverDuplicate(t *testing.T) {
	db, b, _ := openRunning(t, Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), Rand: mathrand.NewChaCha8([32]byte{1})})
	ctx := context.Background()
	raw := "Subject: no id\r\n\r\nbody\r\n"
	ids := map[string]bool{}
	for range 2 {
		d, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw))
		if err != nil || d[0].Duplicate {
			t.Fatalf("id-less message: %+v %v", d, err)
		}
		m, err := db.GetMessage(ctx, b.Inbox.ID, d[0].MessageID)
		if err != nil || !m.RFCMessageIDGenerated || !strings.HasSuffix(m.RFCMessageID, "@inboxd.invalid>") {
			t.Fatalf("generated id: %+v %v", m, err)
		}
		ids[m.RFCMessageID] = true
	}
	if len(ids) != 2 {
		t.Fatalf("generated ids %v, want two distinct", ids)
	}
}

// A duplicate is the same id and the same bytes as any stored copy, not
// only the first; the answer names that copy.
func TestDuplicateOfEveryCopy(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	first := "Message-ID: <list@x>\r\nSubject: s\r\n\r\nbody\r\n"
	footer := first + "-- \r\nlist footer\r\n"
	var ids []string
	for _, raw := range []string{first, footer} {
		d, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw))
		if err != nil || d[0].Duplicate {
			t.Fatalf("copy: %+v %v", d, err)
		}
		ids = append(ids, d[0].MessageID)
	}
	for i, raw := range []string{first, footer} {
		d, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw))
		if err != nil || !d[0].Duplicate || d[0].MessageID != ids[i] {
			t.Fatalf("retry of copy %d: %+v %v, want duplicate of %s", i, d, err, ids[i])
		}
	}
	if msgs, _ := db.InboxMessages(ctx, b.Inbox.ID); len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
}

// One bad message in a group commit fails alone; its batch-mates commit.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	// Every copy stored in inbox bad fails, as a constraint would.
	bad, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "bad@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `CREATE TRIGGER fail_bad BEFORE INSERT ON messages WHEN NEW.inbox_id = '`+bad.ID+`'
		BEGIN SELECT RAISE(ABORT, 'injected failure'); END`); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			in := incoming(b.Inbox.ID, fmt.Sprintf("Message-ID: <g%d@x>\r\nSubject: %d\r\n\r\nword%d\r\n", i, i, i))
			if i%10 == 0 {
				// The first copy is written, the second fails: the
				// savepoint must undo the first.
				in.Targets = append(in.Targets, Target{InboxID: bad.ID})
			}
			_, errs[i] = db.Ingest(ctx, in)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (i%10 == 0) != (err != nil) {
			t.Errorf("message %d: err = %v", i, err)
		}
	}
	msgs, err := db.InboxMessages(ctx, b.Inbox.ID)
	if err != nil || len(msgs) != n-n/10 {
		t.Fatalf("stored %d, want %d (%v)", len(msgs), n-n/10, err)
	}
	// The full-text rows (written after the commit) follow the same
	// outcome: one per stored message, none for a failed one.
	if err := db.awaitSearch(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		var rows int
		if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?`, fmt.Sprintf("word%d", i)).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 1}[i%10 == 0]; rows != want {
			t.Errorf("message %d has %d full-text rows, want %d", i, rows, want)
		}
	}
}

func TestForcedCommitFailureFailsTheBatch(t *testing.T) {
	db, b := openTest(t)
	db.failNext = func() error { return errors.New("disk I/O error") }
	_, err := db.Ingest(context.Background(), incoming(b.Inbox.ID, "Subject: x\r\n\r\ny\r\n"))
	if err == nil {
		t.Fatal("ingest succeeded despite failed commit")
	}
	msgs, _ := db.InboxMessages(context.Background(), b.Inbox.ID)
	if len(msgs) != 0 {
		t.Fatalf("%d messages stored after a failed commit", len(msgs))
	}
}

// Ready is the writer taking the write lock: it answers while the writer
// runs without writing anything, waits (and gives up with its context)
// while the writer does not run, and says ErrClosed once it stopped.
func TestReady(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := db.Ready(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("writer not running: %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); db.Run(runCtx) }()
	v, err := db.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ready(ctx); err != nil {
		t.Errorf("writer running: %v", err)
	}
	if v2, _ := db.DataVersion(ctx); v2 != v {
		t.Errorf("Ready changed the data version %d → %d: it wrote", v, v2)
	}
	stop()
	<-ran
	if err := db.Ready(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("writer stopped: %v", err)
	}
}

// One large transaction (a migration's) does not leave its WAL file's size
// taken on disk: once a checkpoint has emptied the WAL, the file is cut
// back to walSizeLimit.
func TestWALCutBackAfterLargeTransaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inboxd.db")
	db, _, _ := openRunning(t, Options{Path: path, NoFsync: true})
	ctx := context.Background()
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE scratch (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 96) INSERT INTO scratch SELECT randomblob(1 << 20) FROM n`); err != nil {
		t.Fatal(err)
	}
	big, err := os.Stat(path + "-wal")
	if err != nil || big.Size() < 96<<20 {
		t.Fatalf("the WAL after the large transaction: %v %v", big, err)
	}
	if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `DELETE FROM scratch`); err != nil { // the next write restarts the WAL
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() > walSizeLimit {
		t.Errorf("the WAL after a checkpoint and a write: %d bytes %v, want at most %d", fi.Size(), err, walSizeLimit)
	}
}
