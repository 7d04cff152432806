package app

import "testing"

// The counts of an inbox, each only with the scope that reads what it
// counts.
func TestInboxCounts(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	e.deliver(ib, rawMail("c1@x", "one", "b"))
	e.deliver(ib, rawMail("c2@x", "re", "b", "In-Reply-To: <c1@x>\r\n"))
	e.deliver(ib, rawMail("c3@x", "two", "b"))
	e.held(ib, "held")
	if _, err := e.app.InboxCounts(e.ctx, e.caller(nil, "threads:read", "messages:read"), ib); ErrorCode(err) != EPermissionDenied {
		t.Errorf("without inboxes:read: %v", err)
	}
	n, err := e.app.InboxCounts(e.ctx, e.caller(nil, "inboxes:read", "threads:read", "messages:read", "approvals:read"), ib)
	// The held send is in no thread until it is approved.
	if err != nil || *n.Threads != 2 || *n.Messages != 3 || *n.PendingApprovals != 1 || n.Deferred != 0 {
		t.Errorf("counts: %+v %v", n, err)
	}
	n, err = e.app.InboxCounts(e.ctx, e.caller(nil, "inboxes:read"), ib)
	if err != nil || n.Threads != nil || n.Messages != nil || n.PendingApprovals != nil {
		t.Errorf("counts with inboxes:read alone: %+v %v", n, err)
	}
}
