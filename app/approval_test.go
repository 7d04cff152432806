package app

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

// held stores a send held for approval in an inbox, a millisecond after
// the one before it, as the send path does, and returns the approval id.
func (e *env) held(inboxID, subject string) string {
	e.t.Helper()
	e.clock.Advance(time.Millisecond)
	raw := "From: inbox@localhost\r\nTo: ceo@bigcorp.example\r\nSubject: " + subject + "\r\nMessage-ID: <" + subject + "@localhost>\r\n\r\nSign here.\r\n"
	res, err := e.db.Send(e.ctx, store.SendRequest{ProjectID: e.boot.ProjectID, Hold: true,
		Out: store.Outgoing{InboxID: inboxID, Raw: []byte(raw), Recipients: []store.Recipient{{Email: "ceo@bigcorp.example", Type: "to", Route: "relay"}}}})
	if err != nil || res.ApprovalID == "" {
		e.t.Fatalf("hold: %+v, %v", res, err)
	}
	return res.ApprovalID
}

// status is an approval's status as stored.
func (e *env) status(inboxID, approvalID string) string {
	e.t.Helper()
	ap, err := e.db.GetApproval(e.ctx, inboxID, approvalID)
	if err != nil {
		e.t.Fatal(err)
	}
	return ap.Status
}

// A held reply whose parent retention pruned before the decision is
// still approved and queued as held, threaded by its headers like any
// reply: not a not_found for an approval that is there, pending for ever.
func TestApproveReplyToAPrunedMessage(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	parent := e.deliver(ib, rawMail("parent@supplier.example", "quote", "42"))
	raw := "From: inbox@localhost\r\nTo: sales@supplier.example\r\nSubject: Re: quote\r\nMessage-ID: <ok@localhost>\r\n" +
		"In-Reply-To: <parent@supplier.example>\r\n\r\nDeal.\r\n"
	res, err := e.db.Send(e.ctx, store.SendRequest{ProjectID: e.boot.ProjectID, Hold: true, Out: store.Outgoing{InboxID: ib, Raw: []byte(raw),
		ParentID: parent.MessageID, Recipients: []store.Recipient{{Email: "sales@supplier.example", Type: "to", Route: "relay"}}}})
	if err != nil || res.ApprovalID == "" {
		t.Fatalf("hold: %+v, %v", res, err)
	}
	e.clock.Advance(time.Hour)
	e.deliver(ib, rawMail("later@elsewhere.example", "other", "x"))
	if n, err := e.db.PruneMessages(e.ctx, store.Retention{Keep: 1}, 100); err != nil || n != 1 {
		t.Fatalf("pruned %d (%v), want the parent", n, err)
	}
	if _, err := e.db.GetMessage(e.ctx, ib, parent.MessageID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the parent after pruning: %v", err)
	}
	ap, err := e.app.Approve(e.ctx, e.caller(nil, "approvals:write"), ib, res.ApprovalID, input("{}"))
	if err != nil || ap.Status != "approved" || ap.MessageID == nil {
		t.Fatalf("approve: %+v, %v", ap, err)
	}
	if m, err := e.db.GetMessage(e.ctx, ib, *ap.MessageID); err != nil || ap.ThreadID == nil || m.ThreadID != *ap.ThreadID || m.State != store.StatusQueued {
		t.Errorf("the approved send: %+v, %v", m, err)
	}
}

// Reading approvals takes approvals:read and deciding approvals:write,
// each checked before the inbox, the approval or the input: a key that
// may send (and read what it sent for approval) can never approve.
func TestApprovalOperationsNeedTheirScope(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	apr := e.held(ib, "deal")
	writer := e.caller(nil, "approvals:write", "messages:send")
	agent := e.caller(nil, "messages:send", "messages:read", "approvals:read")
	for _, c := range []struct {
		name, scope string
		op          func() error
	}{
		{"list", "approvals:read", func() error {
			_, err := e.app.ListApprovals(e.ctx, writer, "ibx_missing", PageParams{Limit: "x"})
			return err
		}},
		{"get", "approvals:read", func() error { _, err := e.app.Approval(e.ctx, writer, ib, apr); return err }},
		{"approve", "approvals:write", func() error { _, err := e.app.Approve(e.ctx, agent, ib, apr, untouched(t)); return err }},
		{"reject", "approvals:write", func() error { _, err := e.app.Reject(e.ctx, agent, ib, apr, untouched(t)); return err }},
	} {
		err := c.op()
		wantError(t, err, EPermissionDenied, "")
		if m := ErrorMessage(err); m != "This API key lacks the scope "+c.scope+"." {
			t.Errorf("%s: %q", c.name, m)
		}
	}
	if s := e.status(ib, apr); s != "pending" {
		t.Errorf("a refused decision left the approval %s", s)
	}
	if ap, err := e.app.Approval(e.ctx, agent, ib, apr); err != nil || ap.ID != apr || ap.Status != "pending" {
		t.Errorf("the agent reads its held send: %+v, %v", ap, err)
	}
}

// An approval of an inbox outside the caller's grant, or asked for under
// another inbox, answers exactly like one that does not exist, before
// the input is read, and stays undecided.
func TestApprovalOutsideTheGrantIsNotFound(t *testing.T) {
	e := newEnv(t)
	mine, other := e.inbox("mine@example.com"), e.inbox("other@example.com")
	theirs := e.held(other.ID, "theirs")
	c := e.caller([]string{mine.ID}, "approvals:read", "approvals:write")
	for _, at := range []struct{ inbox, approval string }{{other.ID, theirs}, {mine.ID, theirs}, {mine.ID, "apr_missing"}, {"ibx_missing", theirs}} {
		notFound := func(op string, err error) {
			t.Helper()
			if ErrorCode(err) != ENotFound || ErrorMessage(err) != "Resource not found." {
				t.Errorf("%s %s under %s: %v", op, at.approval, at.inbox, err)
			}
		}
		_, err := e.app.Approval(e.ctx, c, at.inbox, at.approval)
		notFound("get", err)
		_, err = e.app.Approve(e.ctx, c, at.inbox, at.approval, input("{}"))
		notFound("approve", err)
		if at.inbox != mine.ID { // within the grant the input comes before the approval
			_, err = e.app.Reject(e.ctx, c, at.inbox, at.approval, untouched(t))
			notFound("reject", err)
		}
		_, err = e.app.Reject(e.ctx, c, at.inbox, at.approval, input(`{"reason":"no"}`))
		notFound("reject", err)
	}
	if _, err := e.app.ListApprovals(e.ctx, c, other.ID, PageParams{Limit: "x"}); ErrorCode(err) != ENotFound {
		t.Errorf("list outside the grant: %v", err)
	}
	if s := e.status(other.ID, theirs); s != "pending" {
		t.Errorf("an approval outside the grant was decided: %s", s)
	}
}

// A decision is made once: the second, either way, is a conflict.
func TestDecideOnce(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	approved, rejected, bare := e.held(ib, "one"), e.held(ib, "two"), e.held(ib, "three")
	c := Caller{Key: store.Key{ID: "key_approver", ProjectID: e.boot.ProjectID, Scopes: []string{"approvals:write"}}}

	ap, err := e.app.Approve(e.ctx, c, ib, approved, input("{}"))
	if err != nil || ap.Status != "approved" || ap.MessageID == nil || ap.DecidedBy == nil || *ap.DecidedBy != c.ID || ap.Reason != nil {
		t.Fatalf("approve: %+v, %v", ap, err)
	}
	bad := Invalidf("reason", "Field \"reason\" must be a string, not number.")
	_, err = e.app.Reject(e.ctx, c, ib, rejected, func(any) error { return bad })
	if err != bad || e.status(ib, rejected) != "pending" {
		t.Fatalf("reject with bad input: %v", err)
	}
	ap, err = e.app.Reject(e.ctx, c, ib, rejected, input(`{"reason":"Not this quarter."}`))
	if err != nil || ap.Status != "rejected" || ap.Reason == nil || *ap.Reason != "Not this quarter." || ap.MessageID != nil || *ap.DecidedBy != c.ID {
		t.Fatalf("reject: %+v, %v", ap, err)
	}
	// No input at all: no reason.
	ap, err = e.app.Reject(e.ctx, c, ib, bare, func(any) error { return nil })
	if err != nil || ap.Status != "rejected" || ap.Reason != nil {
		t.Fatalf("reject without input: %+v, %v", ap, err)
	}
	for _, id := range []string{approved, rejected} {
		for name, op := range map[string]func() error{
			"approve": func() error { _, err := e.app.Approve(e.ctx, c, ib, id, input("{}")); return err },
			"reject":  func() error { _, err := e.app.Reject(e.ctx, c, ib, id, input(`{}`)); return err },
		} {
			err := op()
			wantError(t, err, EConflict, "")
			if m := ErrorMessage(err); m != "This approval was already decided." {
				t.Errorf("%s %s again: %q", name, id, m)
			}
		}
	}
	if s := e.status(ib, approved); s != "approved" {
		t.Errorf("the approved one is now %s", s)
	}
}

// Approvals list newest first, in pages with signed cursors bound to
// their inbox.
func TestListApprovalsPages(t *testing.T) {
	e := newEnv(t)
	ib, other := e.boot.Inbox.ID, e.inbox("other@example.com")
	want := []string{e.held(ib, "a"), e.held(ib, "b"), e.held(ib, "c")}
	slices.Reverse(want)
	e.held(other.ID, "elsewhere")
	c := e.caller(nil, "approvals:read")
	p := PageParams{Limit: "2"}
	var got []string
	var first Page[store.Approval]
	for range 3 {
		page, err := e.app.ListApprovals(e.ctx, c, ib, p)
		if err != nil {
			t.Fatal(err)
		}
		if p.Cursor == "" {
			first = page
		}
		for _, ap := range page.Rows {
			got = append(got, ap.ID)
		}
		if !page.HasMore {
			break
		}
		p.Cursor = page.Next
	}
	if !slices.Equal(got, want) || !first.HasMore || first.Next == "" {
		t.Errorf("approvals %v (first page has_more %v), want %v", got, first.HasMore, want)
	}
	_, err := e.app.ListApprovals(e.ctx, c, other.ID, PageParams{Cursor: first.Next})
	wantError(t, err, EInvalidCursor, "cursor")
	for _, limit := range []string{"0", "101", "x"} {
		_, err := e.app.ListApprovals(e.ctx, c, ib, PageParams{Limit: limit})
		wantError(t, err, EInvalidRequest, "limit")
	}
	if page, err := e.app.ListApprovals(e.ctx, c, ib, PageParams{}); err != nil || len(page.Rows) != 3 || page.HasMore || page.Next != "" {
		t.Errorf("default page: %d rows, has_more %v, %v", len(page.Rows), page.HasMore, err)
	}
}
