package app

import (
	"testing"
)

// Every message operation checks its scope before it looks at the inbox,
// the message or the parameters.
func TestMessageOperationsNeedTheirScope(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, rawMail("m@x", "s", "b"))
	read := e.caller(nil, "messages:read")
	others := e.caller(nil, "messages:delete", "messages:raw", "threads:read")
	for _, c := range []struct {
		scope string
		op    func() error
	}{
		{"messages:read", func() error {
			_, err := e.app.InboxMessages(e.ctx, others, "ibx_missing", InboxMessagesParams{PageParams: PageParams{Limit: "x"}, Q: `"`, Direction: "up"})
			return err
		}},
		{"messages:read", func() error { _, err := e.app.Message(e.ctx, others, ib, d.MessageID); return err }},
		{"messages:delete", func() error { return e.app.DeleteMessage(e.ctx, read, ib, d.MessageID) }},
	} {
		err := c.op()
		wantError(t, err, EPermissionDenied, "")
		if m := ErrorMessage(err); m != "This API key lacks the scope "+c.scope+"." {
			t.Errorf("%s: %q", c.scope, m)
		}
	}
	if _, err := e.app.Message(e.ctx, read, ib, d.MessageID); err != nil {
		t.Errorf("the message is gone after a refused delete: %v", err)
	}
}

// The inbox feed is newest first, filtered by q and direction, checked in
// the order the API always had: the inbox, limit, q, direction, cursor.
func TestInboxMessagesFeed(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	first := e.deliver(ib, rawMail("f1@x", "Invoice", "b"))
	second := e.deliver(ib, rawMail("f2@x", "Lunch", "b"))
	c := e.caller(nil, "messages:read")
	feed := func(p InboxMessagesParams) (Messages, error) { return e.app.InboxMessages(e.ctx, c, ib, p) }
	for _, x := range []struct {
		p           InboxMessagesParams
		code, param string
	}{
		{InboxMessagesParams{PageParams: PageParams{Limit: "0", Cursor: "x"}, Q: `"`, Direction: "up"}, EInvalidRequest, "limit"},
		{InboxMessagesParams{PageParams: PageParams{Cursor: "x"}, Q: `"`, Direction: "up"}, EInvalidRequest, "q"},
		{InboxMessagesParams{PageParams: PageParams{Cursor: "x"}, Direction: "up"}, EInvalidRequest, "direction"},
		{InboxMessagesParams{PageParams: PageParams{Cursor: "x"}}, EInvalidCursor, "cursor"},
	} {
		_, err := feed(x.p)
		wantError(t, err, x.code, x.param)
	}
	if _, err := feed(InboxMessagesParams{Direction: "up"}); ErrorMessage(err) != "direction must be inbound or outbound." {
		t.Errorf("direction: %v", err)
	}
	if _, err := e.app.InboxMessages(e.ctx, c, "ibx_missing", InboxMessagesParams{Direction: "up"}); ErrorCode(err) != ENotFound {
		t.Errorf("a missing inbox with a bad direction: %v, want not found first", err)
	}
	all, err := feed(InboxMessagesParams{})
	if err != nil || len(all.Rows) != 2 || all.Rows[0].ID != second.MessageID || all.Rows[1].ID != first.MessageID || all.Inbox.ID != ib {
		t.Fatalf("feed: %+v, %v", all, err)
	}
	if p, err := feed(InboxMessagesParams{Q: "invoice"}); err != nil || len(p.Rows) != 1 || p.Rows[0].ID != first.MessageID {
		t.Errorf("q invoice: %+v, %v", p, err)
	}
	if p, err := feed(InboxMessagesParams{Direction: "outbound"}); err != nil || len(p.Rows) != 0 {
		t.Errorf("outbound: %+v, %v", p, err)
	}
	// A cursor is bound to its direction.
	p, err := feed(InboxMessagesParams{PageParams: PageParams{Limit: "1"}, Direction: "inbound"})
	if err != nil || len(p.Rows) != 1 || !p.HasMore {
		t.Fatalf("first inbound page: %+v, %v", p, err)
	}
	if next, err := feed(InboxMessagesParams{PageParams: PageParams{Limit: "1", Cursor: p.Next}, Direction: "inbound"}); err != nil || len(next.Rows) != 1 || next.Rows[0].ID != first.MessageID {
		t.Errorf("second inbound page: %+v, %v", next, err)
	}
	_, err = feed(InboxMessagesParams{PageParams: PageParams{Limit: "1", Cursor: p.Next}})
	wantError(t, err, EInvalidCursor, "cursor")
}

// A deleted message, and one of an inbox outside the grant, are not
// found, like a message that does not exist.
func TestMessageNotFound(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	other := e.inbox("other@example.com")
	mine := e.deliver(ib, rawMail("mine@x", "s", "b"))
	theirs := e.deliver(other.ID, rawMail("theirs@x", "s", "b"))
	c := e.caller([]string{ib}, "messages:read", "messages:delete")
	for _, x := range []struct{ inbox, message string }{{other.ID, theirs.MessageID}, {ib, theirs.MessageID}, {ib, "msg_missing"}} {
		if _, err := e.app.Message(e.ctx, c, x.inbox, x.message); ErrorCode(err) != ENotFound || ErrorMessage(err) != "Resource not found." {
			t.Errorf("get %v: %v", x, err)
		}
		if err := e.app.DeleteMessage(e.ctx, c, x.inbox, x.message); ErrorCode(err) != ENotFound {
			t.Errorf("delete %v: %v", x, err)
		}
	}
	if v, err := e.app.Message(e.ctx, c, ib, mine.MessageID); err != nil || v.Message.ID != mine.MessageID || v.Inbox.ID != ib || len(v.Attachments) != 0 {
		t.Fatalf("get: %+v, %v", v, err)
	}
	if err := e.app.DeleteMessage(e.ctx, c, ib, mine.MessageID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.Message(e.ctx, c, ib, mine.MessageID); ErrorCode(err) != ENotFound {
		t.Errorf("get a deleted message: %v", err)
	}
	if err := e.app.DeleteMessage(e.ctx, c, ib, mine.MessageID); ErrorCode(err) != ENotFound {
		t.Errorf("delete a deleted message: %v", err)
	}
	if p, err := e.app.InboxMessages(e.ctx, c, ib, InboxMessagesParams{}); err != nil || len(p.Rows) != 0 {
		t.Errorf("the feed after the delete: %+v, %v", p, err)
	}
}
