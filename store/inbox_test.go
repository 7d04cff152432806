package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
)

// LookupRecipient's answers are cached, and every committed change to the
// inboxes (created, created inside another transaction as ingest does,
// deleted) is seen by the next lookup, the answers "no such inbox" too.
func TestLookupRecipientSeesInboxChanges(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	want := func(address, inboxID, tag string) {
		t.Helper()
		for range 2 { // the second from the cache
			got, err := db.LookupRecipient(ctx, address)
			if inboxID == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s: %+v %v, want not found", address, got, err)
				}
				continue
			}
			if err != nil || got.InboxID != inboxID || got.Tag != tag {
				t.Fatalf("%s: %+v %v, want inbox %s tag %q", address, got, err, inboxID, tag)
			}
		}
	}
	want("inbox@localhost", b.Inbox.ID, "")
	want("new@localhost", "", "")
	want("new+a@localhost", "", "")

	ib, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "new@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	want("new@localhost", ib.ID, "")
	want("New+a@localhost", ib.ID, "a")
	want("new+a@localhost", ib.ID, "a")

	if err := db.DeleteInbox(ctx, b.ProjectID, ib.ID); err != nil {
		t.Fatal(err)
	}
	want("new@localhost", "", "")
	want("new+a@localhost", "", "")

	// An inbox written by a transaction that does more (ingest's
	// ensureInbox), and one that failed on a conflict.
	var auto Inbox
	if err := db.tx(ctx, func(tx *sql.Tx) error {
		auto, err = db.insertInbox(ctx, tx, b.ProjectID, NewInbox{Address: "new@localhost"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "new@localhost"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("second inbox at the address: %v", err)
	}
	want("new+a@localhost", auto.ID, "a")
	want("inbox@localhost", b.Inbox.ID, "")
}
