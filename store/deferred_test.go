package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/inboxd/inboxd/corpus"
)

// fakeClock is the tests' injectable clock (corpus.Clock).
type fakeClock = corpus.Clock

// openAt opens (or reopens) the store at path with a fake clock and starts
// its writer; stop stops the writer and closes the database.
func openAt(t *testing.T, path string, clock *fakeClock) (db *DB, stop func()) {
	t.Helper()
	db, err := Open(context.Background(), Options{Path: path, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); db.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done; db.Close() }) }
	t.Cleanup(stop)
	return db, stop
}

// bootAt opens a bootstrapped store in a new data dir at path, with a
// fake clock.
func bootAt(t *testing.T) (db *DB, stop func(), clock *fakeClock, path string, b Bootstrapped) {
	t.Helper()
	clock = corpus.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	path = filepath.Join(t.TempDir(), "inboxd.db")
	db, stop = openAt(t, path, clock)
	b, _, err := db.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return db, stop, clock, path, b
}

// sendUnconfirmed queues a send to a relay that has not answered yet: its
// Message-ID is not final.
func sendUnconfirmed(t *testing.T, db *DB, inboxID, rfcID string) SendResult {
	t.Helper()
	raw := "From: inbox@localhost\r\nTo: sales@supplier.example\r\nMessage-ID: <" + rfcID + ">\r\nSubject: quote\r\n\r\nPrice?\r\n"
	res, err := db.Send(context.Background(), SendRequest{
		Out: Outgoing{InboxID: inboxID, Raw: []byte(raw), Recipients: []Recipient{{Email: "sales@supplier.example", Type: "to", Route: "relay"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func receivedAt(inboxID, raw string, at time.Time) *Incoming {
	in := incoming(inboxID, raw)
	in.ReceivedAt = at
	return in
}

const deferredReply = "Message-ID: <reply@supplier.example>\r\nIn-Reply-To: <ses-rewritten-1@email.amazonses.com>\r\n" +
	"Subject: Re: quote\r\n\r\nHere is the quote.\r\n"

func TestDeferredLookup(t *testing.T) {
	db, _, clock, _, b := bootAt(t)
	ctx := context.Background()
	inbox := b.Inbox.ID

	// No unconfirmed send: an unresolved reply is stored at once.
	d, err := db.Ingest(ctx, receivedAt(inbox, "Message-ID: <x@y>\r\nIn-Reply-To: <unknown@y>\r\nSubject: s\r\n\r\nb\r\n", clock.Now()))
	if err != nil || d[0].Deferred || d[0].Match != "new" {
		t.Fatalf("without pending send: %+v %v", d, err)
	}

	out := sendUnconfirmed(t, db, inbox, "local-1@localhost")
	// A reply to the id the relay will assign arrives before the relay's 250.
	d, err = db.Ingest(ctx, receivedAt(inbox, deferredReply, clock.Now()))
	if err != nil || !d[0].Deferred {
		t.Fatalf("reply was not deferred: %+v %v", d, err)
	}
	if n, _, _ := db.DeferredCount(ctx); n != 1 {
		t.Fatalf("deferred count %d", n)
	}
	// A retry of the deferred message is a duplicate, not a second copy,
	// also after a pass over another inbox, which has nothing deferred.
	other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ResolveDeferred(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	d, err = db.Ingest(ctx, receivedAt(inbox, deferredReply, clock.Now()))
	if err != nil || !d[0].Duplicate || !d[0].Deferred {
		t.Fatalf("retry of deferred: %+v %v", d, err)
	}
	// Without a Message-ID nothing is a duplicate, deferred or not.
	idless := "In-Reply-To: <ses-rewritten-1@email.amazonses.com>\r\nSubject: Re: quote\r\n\r\nsame\r\n"
	for range 2 {
		if d, err = db.Ingest(ctx, receivedAt(inbox, idless, clock.Now())); err != nil || !d[0].Deferred || d[0].Duplicate {
			t.Fatalf("id-less reply: %+v %v", d, err)
		}
	}
	if n, _, _ := db.DeferredCount(ctx); n != 3 {
		t.Fatalf("deferred count %d, want 3", n)
	}
	// Unrelated mail keeps flowing.
	if _, err := db.Ingest(ctx, receivedAt(inbox, "Message-ID: <other@y>\r\nSubject: s\r\n\r\nb\r\n", clock.Now())); err != nil {
		t.Fatal(err)
	}

	// Confirming the rewritten id threads it at once.
	clock.Advance(3 * time.Minute)
	stored, err := db.ConfirmMessageID(ctx, out.MessageID, "ses-rewritten-1@email.amazonses.com")
	if err != nil || len(stored) != 3 {
		t.Fatalf("confirm: %+v %v", stored, err)
	}
	if stored[0].ThreadID != out.ThreadID || stored[0].Match != "in_reply_to" || stored[0].Sequence != 2 {
		t.Fatalf("deferred reply stored as %+v, want thread %s seq 2", stored[0], out.ThreadID)
	}
	m, err := db.GetMessage(ctx, inbox, stored[0].MessageID)
	if err != nil || !m.CreatedAt.Equal(clock.Now().Add(-3*time.Minute).Truncate(time.Millisecond)) {
		t.Fatalf("created_at is the receive time: %v %v", m.CreatedAt, err)
	}
	if n, _, _ := db.DeferredCount(ctx); n != 0 {
		t.Fatalf("deferred count %d after confirm", n)
	}

	// Once a pass finds nothing deferred, ingests stop looking for a
	// deferred copy of themselves; a new deferral has them look again.
	if _, err := db.ResolveDeferred(ctx, ""); err != nil {
		t.Fatal(err)
	}
	sendUnconfirmed(t, db, inbox, "local-3@localhost")
	again := "Message-ID: <reply-3@supplier.example>\r\nIn-Reply-To: <ses-rewritten-3@email.amazonses.com>\r\n" +
		"Subject: Re: quote\r\n\r\nHere is the other quote.\r\n"
	if d, err = db.Ingest(ctx, receivedAt(inbox, again, clock.Now())); err != nil || !d[0].Deferred {
		t.Fatalf("second reply was not deferred: %+v %v", d, err)
	}
	if d, err = db.Ingest(ctx, receivedAt(inbox, again, clock.Now())); err != nil || !d[0].Duplicate || !d[0].Deferred {
		t.Fatalf("retry of the second deferred reply: %+v %v", d, err)
	}
}

func TestDeferredLookupExpiresAtTenMinutesAndSurvivesRestart(t *testing.T) {
	db, stop, clock, path, b := bootAt(t)
	ctx := context.Background()
	sendUnconfirmed(t, db, b.Inbox.ID, "local-2@localhost")
	received := clock.Now()
	d, err := db.Ingest(ctx, receivedAt(b.Inbox.ID, deferredReply, received))
	if err != nil || !d[0].Deferred {
		t.Fatalf("not deferred: %+v %v", d, err)
	}

	// Restart in the middle: the deferred message is still there.
	stop()
	clock.Advance(DeferWindow - time.Millisecond)
	db, _ = openAt(t, path, clock)
	// A retry after the restart is still a duplicate of the deferred copy.
	if d, err := db.Ingest(ctx, receivedAt(b.Inbox.ID, deferredReply, clock.Now())); err != nil || !d[0].Duplicate || !d[0].Deferred {
		t.Fatalf("retry after restart: %+v %v", d, err)
	}
	if stored, err := db.ResolveDeferred(ctx, ""); err != nil || len(stored) != 0 {
		t.Fatalf("stored before ten minutes: %+v %v", stored, err)
	}
	if n, oldest, _ := db.DeferredCount(ctx); n != 1 || !oldest.Equal(received) {
		t.Fatalf("after restart: %d deferred, oldest %v", n, oldest)
	}

	clock.Advance(time.Millisecond)
	// The writer's own start-up pass may get there first; either way the
	// message is stored now, as a new thread.
	if _, err := db.ResolveDeferred(ctx, ""); err != nil {
		t.Fatal(err)
	}
	msgs, _ := db.InboxMessages(ctx, b.Inbox.ID)
	if len(msgs) != 2 { // the outbound and the reply
		t.Fatalf("%d messages", len(msgs))
	}
	for _, m := range msgs {
		if m.Direction == "inbound" && (m.ThreadMatch != "new" || m.Sequence != 1 || !m.CreatedAt.Equal(received)) {
			t.Fatalf("stored as %+v", m)
		}
	}
	if n, _, _ := db.DeferredCount(ctx); n != 0 {
		t.Fatalf("%d still deferred", n)
	}
}

func TestUnconfirmedSendOlderThanWindowDefersNothing(t *testing.T) {
	clock := corpus.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	db, _ := openAt(t, filepath.Join(t.TempDir(), "inboxd.db"), clock)
	ctx := context.Background()
	b, _, _ := db.Bootstrap(ctx)
	sendUnconfirmed(t, db, b.Inbox.ID, "old@localhost")
	clock.Advance(DeferWindow)
	d, err := db.Ingest(ctx, receivedAt(b.Inbox.ID, deferredReply, clock.Now()))
	if err != nil || d[0].Deferred {
		t.Fatalf("deferred by a send older than the window: %+v %v", d, err)
	}
}

// A send the relay refused never gets its final Message-ID: it holds no
// reply, and what it held is stored at the next pass.
func TestRefusedSendDefersNothing(t *testing.T) {
	db, _, clock, _, b := bootAt(t)
	ctx := context.Background()
	sendUnconfirmed(t, db, b.Inbox.ID, "refused@localhost")
	d, err := db.Ingest(ctx, receivedAt(b.Inbox.ID, deferredReply, clock.Now()))
	if err != nil || !d[0].Deferred {
		t.Fatalf("before the relay answered: %+v %v", d, err)
	}
	claims, err := db.ClaimDeliveries(ctx, Claim{Messages: 10, Lease: time.Minute})
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim: %+v %v", claims, err)
	}
	if err := db.RecordDeliveries(ctx, []DeliveryResult{{ID: claims[0].ID, Status: StatusBounced, Code: 550, Message: "5.7.1 Relaying denied"}}); err != nil {
		t.Fatal(err)
	}
	d, err = db.Ingest(ctx, receivedAt(b.Inbox.ID, "Message-ID: <r2@supplier.example>\r\nIn-Reply-To: <ses-rewritten-2@email.amazonses.com>\r\nSubject: Re: quote\r\n\r\nb\r\n", clock.Now()))
	if err != nil || d[0].Deferred {
		t.Fatalf("after the relay refused the send: %+v %v", d, err)
	}
	stored, err := db.ResolveDeferred(ctx, "")
	if err != nil || len(stored) != 1 || stored[0].Match != "new" {
		t.Fatalf("the pass after the refusal: %+v %v", stored, err)
	}
	if n, _, _ := db.DeferredCount(ctx); n != 0 {
		t.Errorf("deferred count %d", n)
	}
}

// A delivery claimed by a process that died mid-attempt is due again at
// the next start, not after its lease.
func TestReleaseClaims(t *testing.T) {
	clock := corpus.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	db, _ := openAt(t, filepath.Join(t.TempDir(), "inboxd.db"), clock)
	ctx := context.Background()
	b, _, _ := db.Bootstrap(ctx)
	sendUnconfirmed(t, db, b.Inbox.ID, "claimed@localhost")
	claimed, err := db.ClaimDeliveries(ctx, Claim{Messages: 10, Lease: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if next, ok, _ := db.NextDeliveryAt(ctx); !ok || !next.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("leased until %v", next)
	}
	if err := db.ReleaseDeliveryClaims(ctx); err != nil {
		t.Fatal(err)
	}
	if next, ok, _ := db.NextDeliveryAt(ctx); !ok || next.After(clock.Now()) {
		t.Fatalf("after release due at %v, now %v", next, clock.Now())
	}
	// The message's state changed, and a client following events learns it.
	if m, err := db.GetMessage(ctx, b.Inbox.ID, claimed[0].MessageID); err != nil || m.State != StatusDeferred {
		t.Fatalf("after release the message is %q (%v), want deferred", m.State, err)
	}
	evs, err := db.Events(ctx, EventFilter{ProjectID: b.ProjectID, Types: []string{"message.deferred"}}, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("message.deferred events after release: %d %v, want 1", len(evs), err)
	}
	var ev struct {
		Data struct {
			MessageID  string `json:"message_id"`
			Recipients []struct {
				Email          string
				DeliveryStatus string `json:"delivery_status"`
			}
		}
	}
	if err := json.Unmarshal(evs[0].Body, &ev); err != nil || ev.Data.MessageID != claimed[0].MessageID ||
		len(ev.Data.Recipients) != 1 || ev.Data.Recipients[0].DeliveryStatus != StatusDeferred {
		t.Errorf("message.deferred %s (%v)", evs[0].Body, err)
	}
	if err := db.ReleaseDeliveryClaims(ctx); err != nil { // nothing claimed: nothing more
		t.Fatal(err)
	}
	if evs, _ := db.Events(ctx, EventFilter{ProjectID: b.ProjectID, Types: []string{"message.deferred"}}, 10); len(evs) != 1 {
		t.Errorf("%d message.deferred events after a second release, want 1", len(evs))
	}
	again, err := db.ClaimDeliveries(ctx, Claim{Messages: 10, Lease: time.Hour})
	if err != nil || len(again) != 1 || again[0].Attempts != 2 {
		t.Fatalf("reclaim: %+v %v", again, err)
	}
}

// A reply to the Message-ID a relay gave a send threads with the send, in
// the process that recorded the alias and after a restart.
func TestAliasThreadsRepliesAfterRestart(t *testing.T) {
	db, stop, clock, path, b := bootAt(t)
	ctx := context.Background()
	out := sendUnconfirmed(t, db, b.Inbox.ID, "local-4@localhost")
	if _, err := db.ConfirmMessageID(ctx, out.MessageID, "ses-rewritten-4@email.amazonses.com"); err != nil {
		t.Fatal(err)
	}
	reply := func(n int) string {
		return fmt.Sprintf("Message-ID: <reply-%d@supplier.example>\r\nIn-Reply-To: <ses-rewritten-4@email.amazonses.com>\r\n"+
			"Subject: Re: quote\r\n\r\nreply %d\r\n", n, n)
	}
	for n := range 2 {
		if n == 1 {
			stop()
			db, _ = openAt(t, path, clock)
		}
		d, err := db.Ingest(ctx, receivedAt(b.Inbox.ID, reply(n), clock.Now()))
		if err != nil || d[0].ThreadID != out.ThreadID || d[0].Match != "in_reply_to" {
			t.Fatalf("reply %d: %+v %v, want thread %s by in_reply_to", n, d, err, out.ThreadID)
		}
	}
}
