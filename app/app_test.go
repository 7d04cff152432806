package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/inboxd/inboxd/corpus"
	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
)

// clock is the tests' injectable clock (corpus.Clock).
type clock = corpus.Clock

type env struct {
	t     *testing.T
	ctx   context.Context
	db    *store.DB
	app   *App
	clock *clock
	boot  store.Bootstrapped
	admin Caller // every scope, every inbox
}

// newEnv opens a real store under t.TempDir (with its writer running) and
// the operations over it, configured by opts.
func newEnv(t *testing.T, opts ...func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	clk := corpus.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	db, err := store.Open(ctx, store.Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	boot, _, err := db.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); db.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done; db.Close() })
	cfg := Config{Now: clk.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := New(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, db: db, app: a, clock: clk, boot: boot, admin: Caller{Key: boot.AdminKey}}
}

// inbox creates an inbox in the bootstrapped project, a millisecond after
// the one before it (created_at orders the project's lists).
func (e *env) inbox(address string) store.Inbox {
	e.t.Helper()
	e.clock.Advance(time.Millisecond)
	ib, err := e.db.CreateInbox(e.ctx, e.boot.ProjectID, store.NewInbox{Address: address})
	if err != nil {
		e.t.Fatal(err)
	}
	return ib
}

// input is a Decoder of a JSON body.
func input(body string) Decoder {
	return func(v any) error { return json.Unmarshal([]byte(body), v) }
}

// untouched is a Decoder for an operation that must refuse before it
// reads its input.
func untouched(t *testing.T) Decoder {
	return func(any) error {
		t.Helper()
		t.Error("the operation read its input before refusing")
		return errors.New("read")
	}
}

// caller is a key of the bootstrapped project with scopes, restricted to
// inboxes (nil: every inbox).
func (e *env) caller(inboxes []string, scopes ...string) Caller {
	return Caller{Key: store.Key{ID: "key_test", ProjectID: e.boot.ProjectID, Scopes: scopes, InboxIDs: inboxes}}
}

// storedCaller is a caller whose key is stored, as a long-poll woken by a
// commit needs: it checks the key still stands before it answers.
func (e *env) storedCaller(inboxes []string, scopes ...string) Caller {
	e.t.Helper()
	k, _ := e.key("stored", inboxes, scopes...)
	return Caller{Key: k}
}

// deliver ingests raw mail into an inbox through the real ingest path.
func (e *env) deliver(inboxID, raw string) store.Delivered {
	e.t.Helper()
	d, err := e.db.Ingest(e.ctx, &store.Incoming{
		Raw: []byte(raw), Trace: []byte("Received: from test\r\n"), Parsed: message.Parse([]byte(raw)),
		Envelope: store.Envelope{MailFrom: "sender@example.com", RcptTo: []string{"inbox@localhost"}, RemoteIP: "127.0.0.1", Helo: "test"},
		Targets:  []store.Target{{InboxID: inboxID}}, ReceivedAt: e.clock.Now(),
	})
	if err != nil || len(d) != 1 {
		e.t.Fatalf("deliver: %+v %v", d, err)
	}
	e.clock.Advance(time.Millisecond) // distinct created_at, as in real life
	return d[0]
}

// seq is the seq of the nth event of the env's log (n ≥ 1 once there is
// one): a log counts on from where its start put the counter (store.Open),
// not from 0.
func (e *env) seq(n int64) int64 {
	e.t.Helper()
	p, err := e.app.Events(e.ctx, e.caller(nil, "events:read"), EventsParams{Limit: "1"})
	if err != nil || len(p.Events) != 1 {
		e.t.Fatalf("the log's first event: %+v %v", p, err)
	}
	return p.Events[0].Seq - 1 + n
}

// cursor is the event cursor at the nth event of the env's log.
func (e *env) cursor(n int64) string { return eventCursor(e.seq(n)) }

// rawMail is a message with a Message-ID, a subject, extra headers and a body.
func rawMail(id, subject, body string, headers ...string) string {
	h := ""
	for _, x := range headers {
		h += x
	}
	return fmt.Sprintf("From: Sender <sender@example.com>\r\nTo: inbox@localhost\r\nMessage-ID: <%s>\r\nSubject: %s\r\n%s\r\n%s\r\n",
		id, subject, h, body)
}

// waiting is a Config.PollWaiting that signals on the channel it returns;
// a wake-up by some other commit, signalled already, does not block.
func waiting(cfg *Config) <-chan struct{} {
	ch := make(chan struct{}, 1)
	cfg.PollWaiting = func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return ch
}
