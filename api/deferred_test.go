package api

import (
	"context"
	"testing"

	"github.com/inboxd/inboxd/store"
)

// Mail held by the deferred parent lookup is visible on the inbox object
// (SPEC §4, §5.4) while it waits, and no longer once it is stored.
func TestInboxDeferredCount(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	ib := e.boot.Inbox.ID
	// A send through a relay that rewrites Message-IDs, not answered yet.
	raw := "From: inbox@localhost\r\nTo: sales@supplier.example\r\nMessage-ID: <out-1@localhost>\r\nSubject: quote\r\n\r\nPrice?\r\n"
	sent, err := e.db.Send(ctx, store.SendRequest{ProjectID: e.boot.ProjectID,
		Out: store.Outgoing{InboxID: ib, Raw: []byte(raw), Recipients: []store.Recipient{{Email: "sales@supplier.example", Type: "to", Route: "relay"}}}})
	if err != nil {
		t.Fatal(err)
	}
	count := func() (one, listed any) {
		t.Helper()
		got := e.get(e.admin, e.path("/inboxes/%s", ib)).json(t)
		list := e.get(e.admin, e.path("/inboxes")).json(t)["data"].([]any)
		return got["deferred_count"], list[0].(map[string]any)["deferred_count"]
	}
	if one, listed := count(); one != 0.0 || listed != 0.0 {
		t.Fatalf("deferred_count before: %v / %v", one, listed)
	}
	if d := e.deliver(ib, rawMail("reply-1@supplier.example", "Re: quote", "42 EUR", "In-Reply-To: <ses-1@email.amazonses.com>\r\n")); !d.Deferred {
		t.Fatalf("reply not held: %+v", d)
	}
	if one, listed := count(); one != 1.0 || listed != 1.0 {
		t.Fatalf("deferred_count while held: %v / %v", one, listed)
	}
	if _, err := e.db.ConfirmMessageID(ctx, sent.MessageID, "ses-1@email.amazonses.com"); err != nil {
		t.Fatal(err)
	}
	if one, listed := count(); one != 0.0 || listed != 0.0 {
		t.Fatalf("deferred_count after the relay confirmed: %v / %v", one, listed)
	}
}
