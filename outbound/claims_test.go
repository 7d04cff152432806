package outbound

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

// blockingRelay accepts every recipient once released; like smtp.Relay,
// it does not consult ctx.
type blockingRelay struct {
	mu      sync.Mutex
	sends   int
	entered chan struct{}
	release chan struct{}
}

func newBlockingRelay() *blockingRelay {
	return &blockingRelay{entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (r *blockingRelay) Send(ctx context.Context, from string, rcpts []string, raw []byte) ([]store.RelayReply, string) {
	r.mu.Lock()
	r.sends++
	r.mu.Unlock()
	select {
	case r.entered <- struct{}{}:
	default:
	}
	<-r.release
	out := make([]store.RelayReply, len(rcpts))
	for i := range out {
		out[i] = store.RelayReply{Code: 250, Message: "2.0.0 queued"}
	}
	return out, "2.0.0 queued"
}

func (r *blockingRelay) Close() error { return nil }

func (r *blockingRelay) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sends
}

// A graceful stop while the relay is answering: what it answered is
// recorded, so the next start does not relay the mail again.
func TestStopMidRelayRecordsTheAnswer(t *testing.T) {
	db, boot := openStore(t, nil)
	rl := newBlockingRelay()
	cfg := WorkerConfig{Relay: rl, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e := &env{db: db, boot: boot, app: newApp(t, db, nil, app.OutboundRelay, false)}
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "x"})

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); NewWorker(db, cfg).Run(ctx) }()
	<-rl.entered
	cancel()          // SIGTERM while the relay is answering
	close(rl.release) // and it accepts the message
	<-ran
	ds, err := db.DeliveriesOf(context.Background(), []string{res.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[res.MessageID]; len(d) != 1 || d[0].Status != store.StatusSent {
		t.Fatalf("after the stop: %+v, want one delivery sent", d)
	}

	// The next start has nothing to relay.
	ctx2, cancel2 := context.WithCancel(context.Background())
	ran2 := make(chan struct{})
	go func() { defer close(ran2); NewWorker(db, cfg).Run(ctx2) }()
	e.send(t, app.SendInput{To: []app.AddressInput{{Email: "carol@example.com"}}, Subject: subject("later"), Text: "y"})
	second := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "dave@example.com"}}, Subject: subject("last"), Text: "z"})
	e.waitState(t, boot.Inbox.ID, second.MessageID, store.StatusSent)
	cancel2()
	<-ran2
	if n := rl.count(); n != 3 {
		t.Errorf("the relay was handed %d messages, want 3 (the first once)", n)
	}
}

// A claimed message deleted with its inbox while the relay takes an
// earlier one is skipped; the rest of the claim goes on, not left
// "sending" until its lease ends.
func TestDeletedMessageDoesNotStallTheClaim(t *testing.T) {
	db, boot := openStore(t, nil)
	ctx := context.Background()
	other, err := db.CreateInbox(ctx, boot.ProjectID, store.NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	rl := newBlockingRelay()
	cfg := WorkerConfig{Relay: rl, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e := &env{db: db, boot: boot, app: newApp(t, db, nil, app.OutboundRelay, false)}
	in := app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "x"}
	e.send(t, in)
	e.sendFrom(t, other.ID, in)
	last := e.send(t, in)

	wctx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); NewWorker(db, cfg).Run(wctx) }()
	defer func() { cancel(); <-ran }()
	<-rl.entered // the first is at the relay; the other two are claimed
	if err := db.DeleteInbox(ctx, boot.ProjectID, other.ID); err != nil {
		t.Fatal(err)
	}
	close(rl.release)
	e.waitState(t, boot.Inbox.ID, last.MessageID, store.StatusSent)
	if n := rl.count(); n != 2 {
		t.Errorf("the relay was handed %d messages, want 2", n)
	}
}
