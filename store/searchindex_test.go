package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inboxd/inboxd/corpus"
)

func searchThreads(t *testing.T, db *DB, inboxID, q string) int {
	t.Helper()
	query, err := ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	threads, err := db.ListThreads(context.Background(), inboxID, query, nil, 100)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return len(threads)
}

func ftsRows(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.r.QueryRow(`SELECT count(*) FROM messages_fts_docsize`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A message is searchable as soon as it is acknowledged, whether or not
// an indexing pass has run since.
func TestSearchSeesEveryAcknowledgedMessage(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	n := db.sq.passRows + 40 // more than one pass
	for i := range n {
		in := incoming(b.Inbox.ID, fmt.Sprintf("Message-ID: <s%d@x>\r\nSubject: s%d\r\n\r\nhaystack needle%d\r\n", i, i, i))
		if _, err := db.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
		if i%97 == 0 { // searches in between see everything so far
			if got := searchThreads(t, db, b.Inbox.ID, fmt.Sprintf("needle%d", i)); got != 1 {
				t.Fatalf("needle%d: %d threads right after its 250, want 1", i, got)
			}
		}
	}
	if got := searchThreads(t, db, b.Inbox.ID, "haystack"); got != min(n, 100) {
		t.Errorf("haystack: %d threads, want %d", got, min(n, 100))
	}
	if got := ftsRows(t, db); got != n {
		t.Errorf("%d full-text rows for %d messages", got, n)
	}
}

// Messages committed but not indexed when the process stopped are indexed
// after a restart, from what was stored, exactly as at ingest.
func TestSearchIndexRebuildsAfterRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "inboxd.db")
	db, b, stop := openRunning(t, Options{Path: path})

	// Real mail of every shape: HTML only, CJK, encoded names, broken MIME.
	files, err := filepath.Glob(filepath.Join("..", "message", "testdata", "golden", "*.eml"))
	if err != nil || len(files) < 20 {
		t.Fatalf("golden corpus: %d files (%v)", len(files), err)
	}
	want := map[int64][3]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := incoming(b.Inbox.ID, string(raw))
		in.Parsed.MessageID = nil // distinct messages, one thread each
		ds, err := db.Ingest(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].Duplicate || ds[0].Deferred {
			t.Fatalf("%s: delivered %+v", f, ds)
		}
		var rowid int64
		if err := db.r.QueryRow(`SELECT rowid FROM messages WHERE id = ?`, ds[0].MessageID).Scan(&rowid); err != nil {
			t.Fatal(err)
		}
		want[rowid] = db.prepare(in).fts
	}
	// The crash: nothing of the above reached the index.
	unindexAll(t, db)
	stop()

	db, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for rowid, cols := range want {
		got, err := db.storedSearchRow(ctx, tx, rowid)
		if err != nil {
			t.Fatal(err)
		}
		if got != cols {
			t.Errorf("message %d: rebuilt search row\n%q\nat ingest\n%q", rowid, got, cols)
		}
	}
	tx.Rollback()
	if got := searchThreads(t, db, b.Inbox.ID, "Lieferung"); got == 0 && searchThreads(t, db, b.Inbox.ID, "the") == 0 {
		t.Error("nothing found after the restart")
	}
	if got := ftsRows(t, db); got != len(want) {
		t.Errorf("%d full-text rows after the restart, want %d", got, len(want))
	}
}

// A message deleted before a pass reached it is never indexed; after an
// inbox whose messages held the highest keys is deleted, new messages are
// indexed (their keys are above the mark, not the deleted ones reused).
func TestSearchIndexAndDeletes(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	ds, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Message-ID: <gone@x>\r\nSubject: gone\r\n\r\nvanished\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteMessage(ctx, b.Inbox.ID, ds[0].MessageID); err != nil {
		t.Fatal(err)
	}
	if got := searchThreads(t, db, b.Inbox.ID, "vanished"); got != 0 {
		t.Errorf("a deleted message is found (%d)", got)
	}

	other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := db.Ingest(ctx, incoming(other.ID, fmt.Sprintf("Message-ID: <o%d@x>\r\nSubject: o\r\n\r\nobsolete\r\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := searchThreads(t, db, other.ID, "obsolete"); got != 3 { // indexed, mark at the top
		t.Fatalf("obsolete: %d threads, want 3", got)
	}
	if err := db.DeleteInbox(ctx, b.ProjectID, other.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Message-ID: <reuse@x>\r\nSubject: r\r\n\r\nreborn\r\n")); err != nil {
		t.Fatal(err)
	}
	if got := searchThreads(t, db, b.Inbox.ID, "reborn"); got != 1 {
		t.Errorf("a message stored after an inbox deletion: %d threads, want 1", got)
	}
	if got := ftsRows(t, db); got != 1 {
		t.Errorf("%d full-text rows, want 1 (only the last message)", got)
	}
}

// Retention that deletes every message (a quiet server) leaves the mark
// at the deleted keys; the messages stored after it, before and after a
// restart, take keys above it and are found. SQLite alone would hand them
// the deleted keys again, at or below the mark, never to be indexed.
func TestSearchAfterRetentionDeletedEverything(t *testing.T) {
	ctx := context.Background()
	clk := corpus.NewClock(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	opts := Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Now: clk.Now}
	db, b, stop := openRunning(t, opts)
	ingest := func(db *DB, word string) {
		t.Helper()
		in := incoming(b.Inbox.ID, "From: a@x\r\nSubject: s\r\n\r\n"+word+"\r\n")
		in.ReceivedAt = clk.Now()
		if _, err := db.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	pruneAll := func(db *DB, want int) {
		t.Helper()
		clk.Advance(40 * 24 * time.Hour)
		if n, err := db.PruneMessages(ctx, Retention{Cutoff: clk.Now().Add(-time.Hour)}, 500); err != nil || n != want {
			t.Fatalf("pruned %d (%v), want %d", n, err, want)
		}
	}
	ingest(db, "first")
	ingest(db, "first")
	if got := searchThreads(t, db, b.Inbox.ID, "first"); got != 2 {
		t.Fatalf("first: %d threads, want 2", got)
	}
	pruneAll(db, 2)
	ingest(db, "second")
	if got := searchThreads(t, db, b.Inbox.ID, "second"); got != 1 {
		t.Errorf("stored after retention emptied the store: %d threads, want 1", got)
	}
	pruneAll(db, 1)
	stop()

	db, _, _ = openRunning(t, opts)
	ingest(db, "third")
	if got := searchThreads(t, db, b.Inbox.ID, "third"); got != 1 {
		t.Errorf("stored after retention emptied the store and a restart: %d threads, want 1", got)
	}
}

// A search ends while ingest goes on faster than passes take messages: it
// indexes up to what was committed when it was called, not up to a moment
// when nothing is pending.
func TestSearchEndsUnderSteadyIngest(t *testing.T) {
	ctx := context.Background()
	// Passes of one message: eight ingesting goroutines outpace them.
	db, b, _ := openRunning(t, Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, SearchPassRows: 1})
	stop := make(chan struct{})
	flowing := make(chan struct{})
	var stored atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				raw := fmt.Sprintf("Message-ID: <w%d.%d@x>\r\nSubject: hay\r\n\r\nhaystack\r\n", w, i)
				if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw)); err != nil {
					t.Error(err)
					return
				}
				if stored.Add(1) == 200 {
					close(flowing)
				}
			}
		})
	}
	select { // a backlog has built up and keeps growing
	case <-flowing:
	case <-time.After(10 * time.Second):
		close(stop)
		t.Fatal("ingest did not get going")
	}
	if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Message-ID: <needle@x>\r\nSubject: n\r\n\r\nneedle\r\n")); err != nil {
		t.Fatal(err)
	}
	got := searchThreads(t, db, b.Inbox.ID, "needle") // must return while the ingest goes on
	close(stop)
	wg.Wait()
	if got != 1 {
		t.Errorf("needle: %d threads, want 1", got)
	}
}

// A message whose stored body cannot be read is indexed without it, and
// the messages after it are indexed as usual.
func TestDamagedRowDoesNotStopTheIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "inboxd.db")
	db, b, stop := openRunning(t, Options{Path: path})
	var ids []string
	for _, raw := range []string{
		"Message-ID: <d1@x>\r\nSubject: damaged\r\n\r\nunreadable\r\n",
		"Message-ID: <d2@x>\r\nSubject: intact\r\n\r\nreadable\r\n",
	} {
		ds, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ds[0].MessageID)
	}
	// The crash before indexing, and the first body damaged on disk.
	unindexAll(t, db)
	if _, err := db.w.Exec(`UPDATE contents SET body = x'01ff' WHERE message = (SELECT pk FROM messages WHERE id = ?)`, ids[0]); err != nil {
		t.Fatal(err)
	}
	stop()
	db, err := Open(ctx, Options{Path: path, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for q, want := range map[string]int{"readable": 1, "damaged": 1, "unreadable": 0} {
		if got := searchThreads(t, db, b.Inbox.ID, q); got != want {
			t.Errorf("%s: %d threads, want %d", q, got, want)
		}
	}
}

// unindexAll leaves the database as a crash before any indexing pass
// would: no full-text rows, and the mark at the start.
func unindexAll(t *testing.T, db *DB) {
	t.Helper()
	for _, q := range []string{`INSERT INTO messages_fts (messages_fts) VALUES ('delete-all')`, `UPDATE search_index SET indexed_through = 0`} {
		if _, err := db.w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

func searchSegments(t *testing.T, db *DB) int {
	t.Helper()
	var n int
	if err := db.r.QueryRow(`SELECT count(DISTINCT segid) FROM messages_fts_idx`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A retention round compacts a full-text index of many segments into one
// once it holds compactSegments of them, and every search answers as it
// did before; below that, the round compacts nothing.
func TestRetentionCompactsTheSearchIndex(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	n := 0
	var answered time.Time      // when the writer answered the last ingest
	ingest := func(count int) { // each message in a pass, and so a segment, of its own
		for range count {
			body := fmt.Sprintf("common word%d", n)
			if n%2 == 1 {
				body += " odd"
			}
			if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, fmt.Sprintf("Message-ID: <c%d@x>\r\nSubject: c%d\r\n\r\n%s\r\n", n, n, body))); err != nil {
				t.Fatal(err)
			}
			answered = time.Now()
			n++
			searchThreads(t, db, b.Inbox.ID, "common")
		}
	}
	queries := []string{"common", "common odd", "word3", "word13", `"common word7"`, "absent"}
	answers := func() map[string]int {
		m := map[string]int{}
		for _, q := range queries {
			m[q] = searchThreads(t, db, b.Inbox.ID, q)
		}
		return m
	}

	ingest(12)
	db.compactSegments = 1 << 20 // never due
	p, err := db.PruneNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Compactions != 0 {
		t.Fatalf("below the threshold: %d compaction slices", p.Compactions)
	}

	ingest(2) // beside the merged segment: no level holds the four a plain merge takes
	want := answers()
	if want["common"] != 14 || want["common odd"] != 7 || want["word3"] != 1 || want["word13"] != 1 || want["absent"] != 0 {
		t.Fatalf("searches before compaction: %v", want)
	}
	before := searchSegments(t, db)
	if before < 2 {
		t.Fatalf("%d segments, want several", before)
	}
	db.compactSegments = before
	// A writer that is never quiet long enough: the round ends without
	// the compaction rather than waiting, and holds up no later round.
	db.compactQuiet = time.Hour
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if p, err = db.PruneNow(waitCtx); err != nil || p.Compactions != 0 {
		t.Fatalf("never quiet: %d compaction slices, %v", p.Compactions, err)
	}
	if got := searchSegments(t, db); got != before {
		t.Fatalf("never quiet: %d segments, were %d", got, before)
	}
	db.compactQuiet = 300 * time.Millisecond
	if p, err = db.PruneNow(ctx); err != nil {
		t.Fatal(err)
	}
	// The writer notes the time just after answering: allow it 10 ms.
	if waited := time.Since(answered); waited < db.compactQuiet-10*time.Millisecond {
		t.Errorf("the compaction ended %v after the last request, before the writer had been quiet for %v", waited, db.compactQuiet)
	}
	if got := searchSegments(t, db); p.Compactions == 0 || got != 1 {
		t.Fatalf("at the threshold: %d compaction slices, %d segments (were %d), want 1", p.Compactions, got, before)
	}
	if p.Longest <= 0 || p.Longest > p.Took {
		t.Errorf("longest slice %v of a round that took %v", p.Longest, p.Took)
	}
	if got := answers(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("searches after compaction: %v, before: %v", got, want)
	}
	ingest(1) // mail stored after it is found beside what was compacted
	if got := searchThreads(t, db, b.Inbox.ID, "common"); got != 15 {
		t.Errorf("common: %d threads after one more message, want 15", got)
	}
}

// A compaction is due at enough segments, and only once the pages outside
// the largest segment are an eighth of it: a large index that grew a
// little is not rewritten for that.
func TestCompactDue(t *testing.T) {
	for _, c := range []struct {
		segments, largest, total int64
		want                     bool
	}{
		{0, 0, 0, false},            // an empty index
		{7, 100, 200, false},        // too few segments
		{8, 100, 200, true},         // enough, grown by as much again
		{8, 800, 900, true},         // grown by exactly an eighth
		{8, 800, 899, false},        // by a page less
		{13, 100000, 100500, false}, // many small segments beside a large one
	} {
		if got := compactDue(c.segments, c.largest, c.total, 8); got != c.want {
			t.Errorf("compactDue(%d segments, largest %d of %d pages) = %v, want %v", c.segments, c.largest, c.total, got, c.want)
		}
	}
}

// roundWait's rules, on a writer's state alone: a compaction waits for
// quiet, its waits count from the first so that mail just over a second
// apart cannot hold a round for good, a round out of patience leaves a
// compaction it began to the merge slices of later rounds, and those
// wait for quiet too, while merges with no compaction under way do not.
func TestRoundWait(t *testing.T) {
	db := &DB{compactQuiet: time.Second, compactPatience: 15 * time.Second, lastRequest: time.Now()}
	db.round = &round{compact: true}
	if db.roundWait() == nil {
		t.Fatal("a compaction right after a request did not wait")
	}
	first := db.round.waiting
	db.lastRequest = time.Now().Add(-2 * time.Second) // a quiet second
	if db.roundWait() != nil {
		t.Fatal("a compaction after a quiet second waited")
	}
	if db.round.waiting != first {
		t.Fatalf("the quiet second restarted the patience: %v, was %v", db.round.waiting, first)
	}
	// Mail again, a slice done, and the patience since the first wait spent.
	db.lastRequest = time.Now()
	db.round.compacting = true
	db.round.waiting = time.Now().Add(-db.compactPatience)
	if db.roundWait() != nil || db.round.compact || !db.compactUnfinished {
		t.Fatalf("out of patience: waits, compact %v, unfinished %v", db.round.compact, db.compactUnfinished)
	}
	db.round = &round{merge: true}
	if db.roundWait() == nil {
		t.Fatal("the merge slices of an unfinished compaction did not wait for quiet")
	}
	db.compactUnfinished = false
	db.round = &round{merge: true}
	if db.roundWait() != nil {
		t.Fatal("merge slices with no compaction under way waited")
	}
}

// A compaction that a round left under way is finished by later rounds'
// merge slices, after a quiet second like its own, and no new compaction
// starts on the half-merged index meanwhile.
func TestUnfinishedCompactionIsFinishedByMergeSlices(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	// No automerge while indexing, so that the ten segments are still
	// ten when the compaction begins.
	if _, err := db.w.ExecContext(ctx, `INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 0)`); err != nil {
		t.Fatal(err)
	}
	ingest := func(n int) { // in a pass, and so a segment, of its own
		var body strings.Builder
		for k := range 1500 {
			fmt.Fprintf(&body, "m%dw%d ", n, k)
		}
		if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, fmt.Sprintf("Message-ID: <u%d@x>\r\nSubject: u%d\r\n\r\n%s\r\n", n, n, body.String()))); err != nil {
			t.Fatal(err)
		}
		searchThreads(t, db, b.Inbox.ID, fmt.Sprintf("m%dw0", n))
	}
	for n := range 10 {
		ingest(n)
	}
	// What a round out of patience leaves: a compaction begun, a page of
	// it done; then more mail, a segment beside it.
	if did, err := db.compactSearchSlice(ctx, 1, true); err != nil || !did {
		t.Fatalf("start a compaction: %v %v", did, err)
	}
	ingest(10)
	under := searchSegments(t, db)
	if under < 3 {
		t.Fatalf("%d segments after one page of compaction and a message, want it under way", under)
	}
	db.compactUnfinished = true // as roundWait leaves it (TestRoundWait)
	db.compactSegments = 2      // a new compaction would be due

	db.compactQuiet = time.Hour
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := db.PruneNow(waitCtx)
	if err != nil || p.Merges != 0 || p.Compactions != 0 || searchSegments(t, db) != under {
		t.Fatalf("never quiet: %+v %v, %d segments, were %d", p, err, searchSegments(t, db), under)
	}
	db.compactQuiet = 0
	if p, err = db.PruneNow(ctx); err != nil || p.Merges == 0 || p.Compactions != 0 {
		t.Fatalf("quiet: %+v %v, want merge slices and no compaction", p, err)
	}
	// The compaction's segment and the one beside it: no second
	// compaction rewrote the first for the second's sake.
	if got := searchSegments(t, db); got != 2 || db.compactUnfinished {
		t.Fatalf("after the merge slices: %d segments, unfinished %v; want the compaction done and the new segment beside it", got, db.compactUnfinished)
	}
	for n := range 11 {
		if got := searchThreads(t, db, b.Inbox.ID, fmt.Sprintf("m%dw1499", n)); got != 1 {
			t.Errorf("m%dw1499: %d threads, want 1", n, got)
		}
	}
}
