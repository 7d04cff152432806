package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/inboxd/inboxd/corpus"
)

// TestIngestMatchesModel runs random headers and arrival orders through
// the real ingest transaction and checks that SQLite threads them exactly
// like the reference model (thread.Assign over maps), with dense sequences
// per thread and no thread spanning inboxes. (A coverage-guided fuzz
// target over SQLite would instrument the whole transpiled database and
// crawl; thread.FuzzAssign fuzzes the model and this test pins SQLite to
// it on a fixed pseudo-random sample.)
func TestIngestMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 60 {
		data := make([]byte, 4*(1+rng.IntN(24)))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) { checkAgainstModel(t, corpus.Arrivals(data)) })
	}
}

func checkAgainstModel(t *testing.T, arrivals []corpus.Arrival) {
	ctx := context.Background()
	db, b := openIdle(t, filepath.Join(t.TempDir(), "m.db"))
	other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	inboxes := []string{b.Inbox.ID, other.ID}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); db.Run(runCtx) }()
	defer func() { cancel(); <-done }()

	model := corpus.NewModel()
	labels := map[string]string{} // store thread id → model label
	threadInbox := map[string]string{}
	for i, a := range arrivals {
		want := model.Deliver(a)
		d, err := db.Ingest(ctx, incoming(inboxes[a.Inbox], string(a.Raw)))
		if err != nil || len(d) != 1 {
			t.Fatalf("arrival %d: %+v %v", i, d, err)
		}
		got := d[0]
		if got.Duplicate != want.Duplicate {
			t.Fatalf("arrival %d %q: duplicate %v, model says %v", i, a.Raw, got.Duplicate, want.Duplicate)
		}
		if got.Duplicate {
			continue
		}
		if l, ok := labels[got.ThreadID]; ok && l != want.Thread || string(got.Match) != string(want.Match) {
			t.Fatalf("arrival %d %q: thread %s (%s) match %s, model says %s match %s", i, a.Raw, got.ThreadID, l, got.Match, want.Thread, want.Match)
		}
		labels[got.ThreadID] = want.Thread
		if in, ok := threadInbox[got.ThreadID]; ok && in != got.InboxID {
			t.Fatalf("thread %s spans inboxes", got.ThreadID)
		}
		threadInbox[got.ThreadID] = got.InboxID
	}
	// The mapping is one-to-one: distinct store threads are distinct model threads.
	seen := map[string]bool{}
	for _, l := range labels {
		if seen[l] {
			t.Fatalf("two store threads map to model thread %s", l)
		}
		seen[l] = true
	}
	for th := range threadInbox {
		msgs, err := db.ThreadMessages(ctx, th)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if m.Sequence != int64(i+1) {
				t.Fatalf("thread %s: position %d has sequence %d", th, i, m.Sequence)
			}
		}
	}
}
