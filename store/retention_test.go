package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/inboxd/inboxd/corpus"
)

// Retention by age removes every message older than the cutoff — from
// reads, search and the thread counters, with its raw bytes, bodies and
// attachments — and nothing younger; a thread that keeps a young message
// stays, with its count; one left empty goes.
func TestPruneMessagesByAge(t *testing.T) {
	db, b, clk := openClocked(t)
	clock, advance := clk.Now, clk.Advance
	ctx := context.Background()
	ingest := func(raw string) Delivered {
		t.Helper()
		in := incoming(b.Inbox.ID, raw)
		in.ReceivedAt = clock()
		d, err := db.Ingest(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		advance(time.Second)
		return d[0]
	}
	root := ingest("From: a@x\r\nMessage-ID: <root@x>\r\nSubject: kept thread\r\n\r\noldword root\r\n")
	var old []Delivered
	for i := range 4 {
		old = append(old, ingest(fmt.Sprintf("From: a@x\r\nMessage-ID: <old%d@x>\r\nSubject: old %d\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\noldword %d\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\nAAAA\r\n--b--\r\n", i, i, i)))
	}
	advance(40 * 24 * time.Hour)
	reply := ingest("From: b@x\r\nMessage-ID: <reply@x>\r\nIn-Reply-To: <root@x>\r\nSubject: Re: kept thread\r\n\r\nyoungword reply\r\n")
	young := ingest("From: b@x\r\nMessage-ID: <young@x>\r\nSubject: young\r\n\r\nyoungword alone\r\n")
	if reply.ThreadID != root.ThreadID {
		t.Fatal("the reply did not join its thread")
	}
	cutoff := clock().Add(-30 * 24 * time.Hour)

	if n, err := db.PruneMessages(ctx, Retention{Cutoff: cutoff}, 2); err != nil || n != 2 {
		t.Fatalf("first batch: %d %v", n, err)
	}
	if n, err := db.PruneMessages(ctx, Retention{Cutoff: cutoff}, 500); err != nil || n != 3 {
		t.Fatalf("second batch: %d %v", n, err)
	}
	if n, err := db.PruneMessages(ctx, Retention{Cutoff: cutoff}, 500); err != nil || n != 0 {
		t.Fatalf("nothing left: %d %v", n, err)
	}
	for _, d := range append(old, root) {
		if _, err := db.GetMessage(ctx, b.Inbox.ID, d.MessageID); !errors.Is(err, ErrNotFound) {
			t.Errorf("old message %s: %v", d.MessageID, err)
		}
	}
	for _, d := range []Delivered{reply, young} {
		if _, err := db.GetMessage(ctx, b.Inbox.ID, d.MessageID); err != nil {
			t.Errorf("young message %s: %v", d.MessageID, err)
		}
	}
	threads, err := db.ListThreads(ctx, b.Inbox.ID, Query{}, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(threads) != 2 {
		t.Fatalf("%d threads left, want 2: %+v", len(threads), threads)
	}
	for _, th := range threads {
		if th.MessageCount != 1 || th.HasAttachments {
			t.Errorf("thread %q: count %d, attachments %v", th.Subject, th.MessageCount, th.HasAttachments)
		}
	}
	for word, want := range map[string]int{"oldword": 0, "youngword": 2} {
		q, err := ParseQuery(word)
		if err != nil {
			t.Fatal(err)
		}
		found, err := db.InboxPage(ctx, b.Inbox.ID, q, "", nil, 10)
		if err != nil || len(found) != want {
			t.Errorf("search %q: %d found, want %d (%v)", word, len(found), want, err)
		}
	}
	for table, want := range map[string]int{"contents": 2, "attachments": 0, "threads": 2} {
		var n int
		if err := db.r.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil || n != want {
			t.Errorf("%s: %d rows, want %d (%v)", table, n, want, err)
		}
	}
}

// --max-messages keeps each inbox's newest messages and prunes the rest.
func TestPruneMessagesBeyondTheNewest(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 5 {
		in := incoming(b.Inbox.ID, fmt.Sprintf("From: a@x\r\nMessage-ID: <k%d@x>\r\nSubject: %d\r\n\r\nb\r\n", i, i))
		in.ReceivedAt = time.Date(2026, 11, 1, 9, 0, i, 0, time.UTC)
		d, err := db.Ingest(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d[0].MessageID)
	}
	if _, err := db.Ingest(ctx, incoming(other.ID, "From: a@x\r\nMessage-ID: <o@x>\r\nSubject: o\r\n\r\nb\r\n")); err != nil {
		t.Fatal(err)
	}
	if n, err := db.PruneMessages(ctx, Retention{Keep: 2}, 500); err != nil || n != 3 {
		t.Fatalf("pruned %d %v, want 3", n, err)
	}
	for i, id := range ids {
		_, err := db.GetMessage(ctx, b.Inbox.ID, id)
		if kept := i >= 3; kept != (err == nil) {
			t.Errorf("message %d: %v", i, err)
		}
	}
	if msgs, _ := db.InboxMessages(ctx, other.ID); len(msgs) != 1 {
		t.Errorf("the other inbox has %d messages, want its 1", len(msgs))
	}
}

// A retention round of the writer (PruneNow, as every resolveInterval)
// prunes the messages past --retention and the events past
// --event-retention, in slices, and gives the emptied pages back (beyond
// a reserve for the ingests to come); the
// young ones stay, and a second round finds nothing.
func TestRetentionRound(t *testing.T) {
	clk := corpus.NewClock(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	db, b, _ := openRunning(t, Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Now: clk.Now,
		Retention: 30 * 24 * time.Hour, EventRetention: 10 * 24 * time.Hour})
	ctx := context.Background()
	ingest := func(i int) Delivered {
		t.Helper()
		in := benchMessage(b.Inbox.ID, i, 16<<10)
		in.ReceivedAt = clk.Now()
		d, err := db.Ingest(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return d[0]
	}
	for i := range 300 {
		ingest(i)
	}
	clk.Advance(20 * 24 * time.Hour) // the first 300 messages' events are past their retention, not the messages
	for i := 300; i < 310; i++ {
		ingest(i)
	}
	p, err := db.PruneNow(ctx)
	if err != nil || p.Messages != 0 || p.Events != 300 {
		t.Fatalf("first round: %+v %v, want 300 events", p, err)
	}
	clk.Advance(15 * 24 * time.Hour) // now the first 300 messages are past theirs
	young := ingest(310)
	// The pruned messages' raw bytes and bodies alone held 300/311 of
	// these pages.
	var contents int
	if err := db.r.QueryRow(`SELECT count(*) FROM dbstat WHERE name = 'contents'`).Scan(&contents); err != nil {
		t.Fatal(err)
	}
	p, err = db.PruneNow(ctx)
	if err != nil || p.Messages != 300 || p.Events != 10 || p.Pages < contents*300/311-vacuumReserve(0) {
		t.Fatalf("second round: %+v %v, want 300 messages, 10 events, %d pages of contents and more given back", p, err, contents*300/311-vacuumReserve(0))
	}
	var messages, events, free, pages int
	for q, v := range map[string]*int{`SELECT count(*) FROM messages`: &messages, `SELECT count(*) FROM events`: &events,
		`PRAGMA freelist_count`: &free, `PRAGMA page_count`: &pages} {
		if err := db.r.QueryRow(q).Scan(v); err != nil {
			t.Fatal(err)
		}
	}
	if messages != 11 || events != 1 || free > vacuumReserve(pages) {
		t.Errorf("left: %d messages, %d events, %d free pages of %d; want 11, 1, at most %d", messages, events, free, pages, vacuumReserve(pages))
	}
	if _, err := db.GetMessage(ctx, b.Inbox.ID, young.MessageID); err != nil {
		t.Errorf("the young message: %v", err)
	}
	if p, err := db.PruneNow(ctx); err != nil || p != (Pruned{Took: p.Took, Longest: p.Longest}) {
		t.Errorf("third round: %+v %v, want nothing", p, err)
	}
}

// Pruning leaves the full-text index no bigger than what it keeps: a
// delete only marks the entry deleted (deletemerge is 0, so no delete
// starts a merge inside the writer's statements), and the round then
// merges the deleted entries away in slices of its own. Search still finds
// exactly the kept messages, and the table's deletemerge is 0 again after
// the round.
func TestRetentionMergesDeletedSearchEntries(t *testing.T) {
	clk := corpus.NewClock(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	const n, keep = 1200, 100
	db, b, _ := openRunning(t, Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Now: clk.Now, MaxMessages: keep})
	ctx := context.Background()
	ftsBytes := func() (bytes int64) {
		t.Helper()
		if err := db.r.QueryRow(`SELECT sum(length(block)) FROM messages_fts_data`).Scan(&bytes); err != nil {
			t.Fatal(err)
		}
		return bytes
	}
	q, err := ParseQuery("load")
	if err != nil {
		t.Fatal(err)
	}
	found := func() int {
		t.Helper()
		msgs, err := db.InboxPage(ctx, b.Inbox.ID, q, "", nil, 2*n)
		if err != nil {
			t.Fatal(err)
		}
		return len(msgs)
	}
	for i := range n {
		in := benchMessage(b.Inbox.ID, i, 4<<10)
		in.ReceivedAt = clk.Now()
		if _, err := db.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		if i%100 == 99 { // the indexer's passes, as under steady ingest
			found()
		}
	}
	if got := found(); got != n {
		t.Fatalf("before pruning, %d messages match, want %d", got, n)
	}
	full := ftsBytes()

	p, err := db.PruneNow(ctx)
	if err != nil || p.Messages != n-keep || p.Merges == 0 {
		t.Fatalf("round: %+v %v, want %d messages pruned and merge slices", p, err, n-keep)
	}
	if got := ftsBytes(); got > full/4 {
		t.Errorf("the full-text index holds %d bytes after pruning %d of %d messages, %d before: the deleted entries stayed", got, n-keep, n, full)
	}
	if got := found(); got != keep {
		t.Errorf("after pruning, %d messages match, want the %d kept", got, keep)
	}
	var deleteMerge int
	if err := db.r.QueryRow(`SELECT v FROM messages_fts_config WHERE k = 'deletemerge'`).Scan(&deleteMerge); err != nil || deleteMerge != 0 {
		t.Errorf("deletemerge after the round: %d %v, want 0", deleteMerge, err)
	}
	if p, err := db.PruneNow(ctx); err != nil || p != (Pruned{Took: p.Took, Longest: p.Longest}) {
		t.Errorf("the next round: %+v %v, want nothing", p, err)
	}
}

// A send whose delivery is still under way (queued, deferred, being
// sent) outlives --retention and --max-messages until its status is
// final: pruning the message would take its queued delivery with it, and
// the send would vanish with no failed or bounced to say so.
func TestPruneKeepsSendsStillBeingDelivered(t *testing.T) {
	db, b, clk := openClocked(t)
	ctx := context.Background()
	pending := sendTo(t, db, b.Inbox.ID, "pending@localhost", "relay", "bob@example.com")
	clk.Advance(time.Second)
	captured := sendTo(t, db, b.Inbox.ID, "captured@localhost", "capture", "carol@example.com")
	clk.Advance(40 * 24 * time.Hour)
	cutoff := clk.Now().Add(-30 * 24 * time.Hour)
	kept := func(id string) bool {
		_, err := db.GetMessage(ctx, b.Inbox.ID, id)
		return err == nil
	}
	if n, err := db.PruneMessages(ctx, Retention{Keep: 1}, 500); err != nil || n != 0 || !kept(pending) {
		t.Fatalf("--max-messages 1: pruned %d (%v); the pending send kept: %v", n, err, kept(pending))
	}
	if n, err := db.PruneMessages(ctx, Retention{Cutoff: cutoff}, 500); err != nil || n != 1 || kept(captured) || !kept(pending) {
		t.Fatalf("--retention: pruned %d (%v); captured kept %v, pending kept %v", n, err, kept(captured), kept(pending))
	}
	var due int
	if err := db.r.QueryRow(`SELECT count(*) FROM deliveries WHERE next_attempt_at IS NOT NULL`).Scan(&due); err != nil || due != 1 {
		t.Fatalf("%d deliveries still due (%v), want the pending one", due, err)
	}
	markSent(t, db)
	if n, err := db.PruneMessages(ctx, Retention{Cutoff: cutoff}, 500); err != nil || n != 1 || kept(pending) {
		t.Fatalf("once sent: pruned %d (%v), kept %v", n, err, kept(pending))
	}
}
