package outbound

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

// runWorker runs a worker over db until ctx ends; wait returns once it
// has.
func runWorker(ctx context.Context, db *store.DB, cfg WorkerConfig) (wait func()) {
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ran := make(chan struct{})
	go func() { defer close(ran); NewWorker(db, cfg).Run(ctx) }()
	return func() { <-ran }
}

// A graceful stop while the relay is answering: what it answered is
// recorded, so the next start does not relay the mail again. (The relay
// client, like a real smarthost conversation, is not cut short by the
// stop.)
func TestStopMidRelayRecordsTheAnswer(t *testing.T) {
	r := startRelay(t)
	held, release := r.hold()
	db, boot := openStore(t, nil)
	e := &env{db: db, boot: boot, app: newApp(t, db, nil, app.OutboundRelay, false)}
	cfg := WorkerConfig{Relay: relayFor(t, r)}
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "x"})

	ctx, cancel := context.WithCancel(context.Background())
	wait := runWorker(ctx, db, cfg)
	<-held
	cancel()  // SIGTERM while the relay is answering
	release() // and it accepts the message
	wait()
	ds, err := db.DeliveriesOf(context.Background(), []string{res.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[res.MessageID]; len(d) != 1 || d[0].Status != store.StatusSent {
		t.Fatalf("after the stop: %+v, want one delivery sent", d)
	}

	// The next start has nothing of it to relay.
	ctx, cancel = context.WithCancel(context.Background())
	defer runWorker(ctx, db, cfg)()
	defer cancel()
	e.send(t, app.SendInput{To: []app.AddressInput{{Email: "carol@example.com"}}, Subject: subject("later"), Text: "y"})
	last := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "dave@example.com"}}, Subject: subject("last"), Text: "z"})
	e.waitState(t, boot.Inbox.ID, last.MessageID, store.StatusSent)
	if n := r.dataCount(); n != 3 {
		t.Errorf("the relay was handed %d messages, want 3 (the first once)", n)
	}
}

// A claimed message deleted with its inbox while the relay takes an
// earlier one is skipped; the rest of the claim goes on, not left
// "sending" until its lease ends.
func TestDeletedMessageDoesNotStallTheClaim(t *testing.T) {
	r := startRelay(t)
	held, release := r.hold()
	db, boot := openStore(t, nil)
	ctx := context.Background()
	other, err := db.CreateInbox(ctx, boot.ProjectID, store.NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, boot: boot, app: newApp(t, db, nil, app.OutboundRelay, false)}
	in := app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "x"}
	e.send(t, in)
	e.sendFrom(t, other.ID, in)
	last := e.send(t, in)

	wctx, cancel := context.WithCancel(ctx)
	defer runWorker(wctx, db, WorkerConfig{Relay: relayFor(t, r)})()
	defer cancel()
	<-held // the first is at the relay; the other two are claimed
	if err := db.DeleteInbox(ctx, boot.ProjectID, other.ID); err != nil {
		t.Fatal(err)
	}
	release()
	e.waitState(t, boot.Inbox.ID, last.MessageID, store.StatusSent)
	if n := r.dataCount(); n != 2 {
		t.Errorf("the relay was handed %d messages, want 2", n)
	}
}
