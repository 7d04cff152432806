package store

import (
	"context"
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
