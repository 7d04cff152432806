package store

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// TestCommitsWakeTheWorkersTheyConcern: every commit closes Changed (the
// long-polls'), but an ingest closes OutboundChanged only when it changed
// a delivery (a DSN's bounce) and WebhooksChanged only when it queued a
// webhook delivery; other transactions (an endpoint's creation) wake both.
func TestCommitsWakeTheWorkersTheyConcern(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	// Start-up's own commits (the deferred lookup, the retention round)
	// are behind this; search-index passes wake no worker.
	if _, err := db.PruneNow(ctx); err != nil {
		t.Fatal(err)
	}
	type waits struct{ all, outbound, webhooks <-chan struct{} }
	take := func() waits { return waits{db.Changed(), db.OutboundChanged(), db.WebhooksChanged()} }
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	check := func(what string, w waits, outbound, webhooks bool) {
		t.Helper()
		if !closed(w.all) {
			t.Errorf("%s: Changed not closed", what)
		}
		if got := closed(w.outbound); got != outbound {
			t.Errorf("%s: OutboundChanged closed %v, want %v", what, got, outbound)
		}
		if got := closed(w.webhooks); got != webhooks {
			t.Errorf("%s: WebhooksChanged closed %v, want %v", what, got, webhooks)
		}
	}
	ingest := func(raw string) {
		t.Helper()
		if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw)); err != nil {
			t.Fatal(err)
		}
	}

	w := take()
	ingest("Message-ID: <plain-1@example.com>\r\nSubject: hi\r\n\r\nhello\r\n")
	check("a message, no endpoint", w, false, false)

	sendTo(t, db, b.Inbox.ID, "out-1@localhost", "relay", "alice@example.com")
	markSent(t, db)
	w = take()
	ingestDSN(t, db, b.Inbox.ID, dsnRaw("bounce-1@mx.example.org", "out-1@localhost", failedAlice))
	check("a DSN that bounces a delivery", w, true, false)

	w = take()
	if _, _, err := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "http://hook", Secret: testSecret}); err != nil {
		t.Fatal(err)
	}
	check("an endpoint created", w, true, true)

	w = take()
	ingest("Message-ID: <plain-2@example.com>\r\nSubject: hi\r\n\r\nhello again\r\n")
	check("a message, with an endpoint", w, false, true)
}

// A commit's wakes are its own: a transaction that takes the writer right
// after it (an index pass a search runs, which wakes nobody) must not
// clear them before they are delivered. The handover is a race, so many
// ingests meet passes run as fast as they can; before the fix a few in a
// thousand lost their wake-up, and the webhook worker slept until its
// heartbeat.
func TestWakesSurviveTheNextTransaction(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	if _, _, err := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "https://hook.example/x", Secret: "whsec_x"}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := db.indexSearch(ctx, math.MaxInt64); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	missed := 0
	const n = 3000
	for i := range n {
		ch := db.WebhooksChanged()
		if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, fmt.Sprintf("From: a@x\r\nSubject: s%d\r\n\r\nw\r\n", i))); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ch:
		default:
			missed++
		}
	}
	close(stop)
	<-done
	if missed > 0 {
		t.Errorf("%d of %d ingests that queued a webhook delivery did not close WebhooksChanged", missed, n)
	}
}
