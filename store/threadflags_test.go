package store

import (
	"context"
	"database/sql"
	"maps"
	"path/filepath"
	"slices"
	"testing"
)

func threadFlags(t *testing.T, db *DB, inboxID string) map[string]bool {
	t.Helper()
	threads, err := db.ListThreads(context.Background(), inboxID, Query{}, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, th := range threads {
		out[th.Subject] = th.HasAttachments
	}
	return out
}

// A thread has attachments from the first message with one on, whether
// stored with it or set by migration 0009 for mail stored before.
func TestThreadHasAttachments(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "inboxd.db")
	db, b, stop := openRunning(t, Options{Path: path})
	for _, raw := range []string{
		"Message-ID: <p1@x>\r\nSubject: plain\r\n\r\nno files\r\n",
		"Message-ID: <p2@x>\r\nIn-Reply-To: <p1@x>\r\nSubject: plain\r\n\r\nstill none\r\n",
		"Message-ID: <l1@x>\r\nSubject: later\r\n\r\nnone yet\r\n",
		"Message-ID: <l2@x>\r\nIn-Reply-To: <l1@x>\r\nSubject: later\r\nMIME-Version: 1.0\r\n" +
			"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nnow one\r\n" +
			"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=a.pdf\r\n\r\n%PDF\r\n--b--\r\n",
	} {
		if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw)); err != nil {
			t.Fatal(err)
		}
	}
	got := threadFlags(t, db, b.Inbox.ID)
	for subject, w := range map[string]bool{"plain": false, "later": true} {
		if got[subject] != w {
			t.Errorf("thread %q has_attachments %v, want %v", subject, got[subject], w)
		}
	}
	stop()

	// The database as it was before migration 0009: the schema-13
	// fixture with 0013, 0012, 0010 and 0009 undone (0011 creates its
	// table only if it is missing).
	path = openFixtureV13(t)
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	flags := `SELECT id, has_attachments FROM threads`
	want := dumpRows(t, raw, flags) // as ingest kept them
	if !slices.Contains(slices.Collect(maps.Values(want)), "1") || !slices.Contains(slices.Collect(maps.Values(want)), "0") {
		t.Fatalf("the fixture's threads: %v", want)
	}
	for _, q := range append(slices.Clone(undoMigration0013), `DROP INDEX webhook_deliveries_event`,
		`ALTER TABLE idempotency_keys RENAME COLUMN result TO response`,
		`ALTER TABLE idempotency_keys ADD COLUMN status INTEGER NOT NULL DEFAULT 202`,
		`ALTER TABLE threads DROP COLUMN has_attachments`, `PRAGMA user_version = 8`) {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	raw.Close()
	db, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	compareDumps(t, "has_attachments after migration 0009", want, dumpRows(t, db.r, flags))
}

// A missing parent stops being one when it arrives (SPEC §4 step 5).
func TestArrivingParentDropsItsLink(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	links := func() []string {
		t.Helper()
		rows, err := db.r.Query(`SELECT rfc_message_id FROM missing_parents ORDER BY 1`)
		ids, err := scanAll(rows, err, "links", func(r rowScanner) (id string, err error) { return id, r.Scan(&id) })
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	ingest := func(raw string) {
		t.Helper()
		if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw)); err != nil {
			t.Fatal(err)
		}
	}
	ingest("Message-ID: <child@x>\r\nReferences: <parent@x> <grandparent@x>\r\nSubject: re\r\n\r\nchild\r\n")
	if got := links(); !slices.Equal(got, []string{"grandparent@x", "parent@x"}) {
		t.Fatalf("links after the child: %v", got)
	}
	ingest("Message-ID: <parent@x>\r\nSubject: parent\r\n\r\nparent\r\n")
	if got := links(); !slices.Equal(got, []string{"grandparent@x"}) {
		t.Errorf("links after the parent arrived: %v, want [grandparent@x]", got)
	}
}

// A page read after its thread row may hold messages stored in between;
// the row's attachment flag does not speak for those.
func TestMayHaveAttachments(t *testing.T) {
	seq := func(n int64) Message { return Message{Sequence: n} }
	for _, tc := range []struct {
		thread Thread
		page   []Message
		want   bool
	}{
		{Thread{HasAttachments: true, LastSequence: 2}, []Message{seq(1), seq(2)}, true},
		{Thread{LastSequence: 2}, []Message{seq(1), seq(2)}, false},
		{Thread{LastSequence: 2}, []Message{seq(3)}, true}, // stored after the row was read
		{Thread{LastSequence: 2}, nil, false},
	} {
		if got := tc.thread.MayHaveAttachments(tc.page); got != tc.want {
			t.Errorf("%+v with sequences up to %v: %v, want %v", tc.thread, tc.page, got, tc.want)
		}
	}
}
