package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
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

// Another process (the CLI) changes inboxes beside a running server: an
// address it creates is found at once (no "no such inbox" is cached), and
// an answer its commits made stale (a deleted inbox, a +tag address that
// now has an inbox of its own) is gone once the server's writer has
// noticed them (noticeOtherWriters, every indexDelay in Run).
func TestLookupRecipientSeesOtherProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "inboxd.db")
	db, b := openIdle(t, path)
	gone, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "gone@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	db.noticeOtherWriters(ctx) // this process's own commits
	lookup := func(address string) (Target, error) {
		t.Helper()
		for range 2 { // the second from the cache, if anything is cached
			if _, err := db.LookupRecipient(ctx, address); err != nil && !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
		}
		return db.LookupRecipient(ctx, address)
	}
	if _, err := lookup("fresh@localhost"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("fresh@ before it exists: %v", err)
	}
	if got, err := lookup("inbox+x@localhost"); err != nil || got.InboxID != b.Inbox.ID {
		t.Fatalf("inbox+x@: %+v %v", got, err)
	}
	if _, err := lookup("gone@localhost"); err != nil {
		t.Fatalf("gone@ before its deletion: %v", err)
	}

	cli, err := Open(ctx, Options{Path: path, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := cli.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "fresh@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	tagged, err := cli.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "inbox+x@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.DeleteInbox(ctx, b.ProjectID, gone.ID); err != nil {
		t.Fatal(err)
	}
	cli.Close()

	if got, err := db.LookupRecipient(ctx, "fresh@localhost"); err != nil || got.InboxID != fresh.ID {
		t.Errorf("fresh@ right after the CLI created it: %+v %v, want %s", got, err, fresh.ID)
	}
	db.noticeOtherWriters(ctx)
	if got, err := db.LookupRecipient(ctx, "inbox+x@localhost"); err != nil || got.InboxID != tagged.ID || got.Tag != "" {
		t.Errorf("inbox+x@ after the CLI gave it an inbox: %+v %v, want %s", got, err, tagged.ID)
	}
	if got, err := db.LookupRecipient(ctx, "gone@localhost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("gone@ after the CLI deleted it: %+v %v, want not found", got, err)
	}
}
