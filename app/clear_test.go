package app

import "testing"

// Clearing an inbox takes messages:delete and an inbox of the grant (one
// outside it is not found, as a missing one); it deletes that inbox's
// messages and no other's.
func TestDeleteInboxMessages(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	other := e.inbox("other@localhost")
	for _, id := range []string{"a@x", "b@x"} {
		e.deliver(ib, rawMail(id, "s", "b"))
	}
	kept := e.deliver(other.ID, rawMail("c@x", "s", "b"))

	_, err := e.app.DeleteInboxMessages(e.ctx, e.caller(nil, "messages:read", "threads:read"), "ibx_missing")
	wantError(t, err, EPermissionDenied, "")
	_, err = e.app.DeleteInboxMessages(e.ctx, e.caller([]string{other.ID}, "messages:delete"), ib)
	wantError(t, err, ENotFound, "")
	if _, err = e.app.DeleteInboxMessages(e.ctx, e.caller(nil, "messages:delete"), "ibx_missing"); ErrorCode(err) != ENotFound {
		t.Errorf("a missing inbox: %v", err)
	}

	n, err := e.app.DeleteInboxMessages(e.ctx, e.caller([]string{ib}, "messages:delete"), ib)
	if err != nil || n != 2 {
		t.Fatalf("DeleteInboxMessages = %d, %v; want 2", n, err)
	}
	read := e.caller(nil, "messages:read")
	page, err := e.app.InboxMessages(e.ctx, read, ib, InboxMessagesParams{})
	if err != nil || len(page.Rows) != 0 {
		t.Errorf("the cleared inbox lists %d messages (%v)", len(page.Rows), err)
	}
	if _, err := e.app.Message(e.ctx, read, other.ID, kept.MessageID); err != nil {
		t.Errorf("the other inbox lost its message: %v", err)
	}
}
