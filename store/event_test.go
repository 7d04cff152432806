package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inboxd/inboxd/corpus"
)

// Event-log retention deletes the oldest events created before the
// cutoff — a prefix of the log, with their webhook deliveries — and
// nothing younger; a deleted event is no longer a position, so a cursor
// naming it is refused as older than the log.
func TestPruneEvents(t *testing.T) {
	db, b, clk := openClocked(t)
	clock := clk.Now
	ctx := context.Background()
	if _, _, err := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "http://127.0.0.1:1/", Secret: "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}); err != nil {
		t.Fatal(err)
	}
	deliver := func(i int) {
		raw := fmt.Sprintf("From: a@x\r\nMessage-ID: <p%d@x>\r\nSubject: %d\r\n\r\nb\r\n", i, i)
		if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		deliver(i) // old
	}
	old, err := db.LastEventSeq(ctx, b.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(40 * 24 * time.Hour)
	for i := 5; i < 8; i++ {
		deliver(i) // young
	}
	cutoff := clock().Add(-30 * 24 * time.Hour)

	n, err := db.PruneEvents(ctx, cutoff, 3)
	if err != nil || n != 3 {
		t.Fatalf("first batch: %d %v", n, err)
	}
	n, err = db.PruneEvents(ctx, cutoff, 1000)
	if err != nil || n != 2 {
		t.Fatalf("second batch: %d %v", n, err)
	}
	if n, err := db.PruneEvents(ctx, cutoff, 1000); err != nil || n != 0 {
		t.Fatalf("nothing left to prune: %d %v", n, err)
	}
	var events, deliveries int
	db.r.QueryRow(`SELECT count(*) FROM events`).Scan(&events)
	db.r.QueryRow(`SELECT count(*) FROM webhook_deliveries`).Scan(&deliveries)
	if events != 3 || deliveries != 3 {
		t.Errorf("%d events and %d webhook deliveries left, want 3 and 3", events, deliveries)
	}
	// A reader at the last pruned event missed nothing; one before it did.
	if ok, err := db.IsEventPosition(ctx, b.ProjectID, old); err != nil || !ok {
		t.Errorf("the last pruned event is not a position: %v %v", ok, err)
	}
	if ok, err := db.IsEventPosition(ctx, b.ProjectID, old-1); err != nil || ok {
		t.Errorf("an earlier pruned event is still a position: %v %v", ok, err)
	}
	if last, _ := db.LastEventSeq(ctx, b.ProjectID); last <= old {
		t.Errorf("the young events are gone: last %d", last)
	} else if ok, _ := db.IsEventPosition(ctx, b.ProjectID, last); !ok {
		t.Error("a retained event is not a position")
	}
}

// A new database is made with auto_vacuum INCREMENTAL, so the pages
// retention empties can be given back.
func TestNewDatabaseVacuumsIncrementally(t *testing.T) {
	db, _ := openTest(t)
	var mode int
	if err := db.r.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum = %d (%v), want 2 (INCREMENTAL)", mode, err)
	}
}

// The writer counts seqs on past where the log stopped when it opens
// (the log is keyed by project, migration 0018): after a restart, and
// after retention emptied the log before it, the next event's seq is
// past the last one handed out; events of two projects share one
// sequence.
func TestEventSeqAfterRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "inboxd.db")
	clk := corpus.NewClock(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	db, b, stop := openRunning(t, Options{Path: path, NoFsync: true, Now: clk.Now})
	if _, err := db.w.Exec(`INSERT INTO projects (id, name, created_at) VALUES ('prj_other', 'other', 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateInbox(ctx, "prj_other", NewInbox{Address: "other@localhost"}); err != nil {
		t.Fatal(err)
	}
	var otherInbox string
	if err := db.r.QueryRow(`SELECT id FROM inboxes WHERE project_id = 'prj_other'`).Scan(&otherInbox); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for i := range 4 {
		inbox, project := b.Inbox.ID, b.ProjectID
		if i%2 == 1 {
			inbox, project = otherInbox, "prj_other"
		}
		if _, err := db.Ingest(ctx, incoming(inbox, fmt.Sprintf("Subject: %d\r\n\r\nx\r\n", i))); err != nil {
			t.Fatal(err)
		}
		s, err := db.LastEventSeq(ctx, project)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, s)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("seqs across two projects %v: not one sequence", seqs)
		}
	}
	// Retention empties both logs: only events_floor remembers the seqs.
	if n, err := db.PruneEvents(ctx, db.Now().Add(time.Hour), 1000); err != nil || n != len(seqs) {
		t.Fatalf("pruned %d of %d (%v)", n, len(seqs), err)
	}
	stop()
	// The clock of the second start is behind the first's (a machine
	// whose clock was reset), so its seqClock counts for nothing: the
	// count goes on from events_floor alone.
	back := corpus.NewClock(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	if seqClock(back.Now()) >= seqs[0] {
		t.Fatalf("the second start's clock is not behind the first's seqs")
	}
	db, _, _ = openRunning(t, Options{Path: path, NoFsync: true, Now: back.Now}) // b is the first start's
	if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Subject: after\r\n\r\nx\r\n")); err != nil {
		t.Fatal(err)
	}
	if s, _ := db.LastEventSeq(ctx, b.ProjectID); s != seqs[3]+1 {
		t.Errorf("first event after the restart: seq %d, want %d", s, seqs[3]+1)
	}
}

// A database restored from a backup has not seen the events handed out
// after the copy was taken, but readers may hold cursors to them. The
// restored log numbers its new events past all of those, so such a
// cursor is no position in it (invalid_cursor: start over) rather than
// naming a newer event and silently skipping the ones before it.
func TestEventSeqPastARestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "inboxd.db"), filepath.Join(dir, "backup.db")
	clk := corpus.NewClock(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	opts := Options{Path: path, NoFsync: true, Now: clk.Now}
	db, b, stop := openRunning(t, opts)
	n := 0
	deliver := func(db *DB, count int) (last int64) {
		for range count {
			n++
			if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, fmt.Sprintf("Message-ID: <r%d@x>\r\nSubject: %d\r\n\r\nx\r\n", n, n))); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Millisecond)
		}
		last, err := db.LastEventSeq(ctx, b.ProjectID)
		if err != nil {
			t.Fatal(err)
		}
		return last
	}
	deliver(db, 2)
	if err := db.BackupTo(ctx, backup); err != nil {
		t.Fatal(err)
	}
	lost := deliver(db, 3) // a reader's cursor: the last event before the disk died
	stop()

	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	if err := os.Rename(backup, path); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	db, _, _ = openRunning(t, opts)
	if first := deliver(db, 1); first <= lost {
		t.Fatalf("first event after the restore has seq %d, not past the lost timeline's %d", first, lost)
	}
	deliver(db, 5)
	if ok, err := db.IsEventPosition(ctx, b.ProjectID, lost); err != nil || ok {
		t.Errorf("a cursor from the lost timeline is a position after the restore: %v %v", ok, err)
	}
}

// The seqs a start counts on from still fit a webhook delivery's id,
// which holds 48 bits of its event's seq, for the next decades.
func TestSeqClockFitsDeliveryIDs(t *testing.T) {
	for _, at := range []time.Time{time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC), time.Date(2110, 1, 1, 0, 0, 0, 0, time.UTC)} {
		seq := seqClock(at) + 1_000_000
		if got, ok := parseDeliveryID(deliveryID(at.UnixMilli(), seq, "whk_x"), "whk_x"); !ok || got != seq {
			t.Errorf("%s: seq %d comes back from its delivery id as %d (%v)", at.Format("2006"), seq, got, ok)
		}
	}
}

// A clock set a century ahead does not push seqs past what a delivery id
// holds: Open counts on from the log then, and warns.
func TestEventSeqIgnoresAClockFarAhead(t *testing.T) {
	ctx := context.Background()
	clk := corpus.NewClock(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC))
	db, b, _ := openRunning(t, Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Now: clk.Now})
	if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Subject: far\r\n\r\nx\r\n")); err != nil {
		t.Fatal(err)
	}
	seq, err := db.LastEventSeq(ctx, b.ProjectID)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := parseDeliveryID(deliveryID(clk.Now().UnixMilli(), seq, "whk_x"), "whk_x"); !ok || got != seq {
		t.Errorf("seq %d under a clock in 2200 does not fit a delivery id (back as %d, %v)", seq, got, ok)
	}
}
