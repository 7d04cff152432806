package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

// sent stores an outbound message of an inbox, as the send path does.
func (e *env) sent(inboxID, subject string) string {
	e.t.Helper()
	e.clock.Advance(time.Millisecond)
	raw := "From: inbox@localhost\r\nTo: a@example.com\r\nSubject: " + subject + "\r\nMessage-ID: <" + subject + "@localhost>\r\n\r\nHello.\r\n"
	res, err := e.db.Send(e.ctx, store.SendRequest{ProjectID: e.boot.ProjectID,
		Out: store.Outgoing{InboxID: inboxID, Raw: []byte(raw), Confirmed: true, Recipients: []store.Recipient{{Email: "a@example.com", Type: "to", Route: "capture"}}}})
	if err != nil || res.MessageID == "" {
		e.t.Fatalf("send: %+v, %v", res, err)
	}
	return res.MessageID
}

func ids(ms []store.Message) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

// A wait answers what was stored after its cursor, each message once:
// those stored between two calls too, and those stored while it waits.
func TestWaitForMessagesFromTheCursor(t *testing.T) {
	var waited <-chan struct{}
	e := newEnv(t, func(c *Config) { waited = waiting(c) })
	ib := e.boot.Inbox.ID
	e.deliver(ib, rawMail("old@x", "old", "before the first wait"))
	c := e.storedCaller(nil, "messages:read")

	// Without a cursor a wait starts at the end: the old message is not new.
	got := make(chan Arrivals, 1)
	wait := func(p WaitParams) {
		go func() {
			a, err := e.app.WaitForMessages(e.ctx, c, ib, p)
			if err != nil {
				t.Error(err)
			}
			got <- a
		}()
	}
	wait(WaitParams{Timeout: "30"})
	<-waited
	first := e.deliver(ib, rawMail("one@x", "one", "the first reply"))
	a := <-got
	if fmt.Sprint(ids(a.Rows)) != fmt.Sprint([]string{first.MessageID}) || a.Next == "" || a.After[0] != a.Next || a.HasMore {
		t.Fatalf("woken: %v next %q after %v more %v", ids(a.Rows), a.Next, a.After, a.HasMore)
	}
	if b := a.Bodies[first.MessageID]; b.Text == nil {
		t.Errorf("no body opened: %+v", b)
	}

	// Two arrive between calls: the next call answers both at once, in
	// the order they were stored.
	two := e.deliver(ib, rawMail("two@x", "two", "b"))
	three := e.deliver(ib, rawMail("three@x", "three", "b", "In-Reply-To: <two@x>\r\n"))
	a2, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{After: a.Next, Timeout: "30"})
	if err != nil || fmt.Sprint(ids(a2.Rows)) != fmt.Sprint([]string{two.MessageID, three.MessageID}) {
		t.Fatalf("between calls: %v, %v", ids(a2.Rows), err)
	}
	// A surface that showed only the first reads the second next time.
	a3, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{After: a2.After[0], Timeout: "0"})
	if err != nil || fmt.Sprint(ids(a3.Rows)) != fmt.Sprint([]string{three.MessageID}) || a3.Next != a2.Next {
		t.Fatalf("from After[0]: %v next %q (want %q), %v", ids(a3.Rows), a3.Next, a2.Next, err)
	}
	// Nothing new: an expired wait answers its cursor again, nothing twice.
	a4, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{After: a2.Next, Timeout: "0"})
	if err != nil || len(a4.Rows) != 0 || a4.Next != a2.Next || a4.Rows == nil && a4.After != nil {
		t.Fatalf("nothing new: %v next %q, %v", ids(a4.Rows), a4.Next, err)
	}

	// The limit: one at a time, with has_more, and the rest next time.
	a5, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{After: a.Next, Limit: "1"})
	if err != nil || fmt.Sprint(ids(a5.Rows)) != fmt.Sprint([]string{two.MessageID}) || !a5.HasMore {
		t.Fatalf("limit 1: %v more %v, %v", ids(a5.Rows), a5.HasMore, err)
	}
}

// A wait whose key is revoked while it waits answers 401, not the mail
// that arrives after the revocation: a leaked key is revoked to stop it.
func TestWaitEndsWithItsKey(t *testing.T) {
	var waited <-chan struct{}
	e := newEnv(t, func(c *Config) { waited = waiting(c) })
	ib := e.boot.Inbox.ID
	c := e.storedCaller(nil, "messages:read")
	got := make(chan error, 1)
	go func() {
		a, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{Timeout: "30"})
		if len(a.Rows) != 0 {
			t.Errorf("a revoked key got %v", ids(a.Rows))
		}
		got <- err
	}()
	<-waited
	if err := e.db.RevokeKey(e.ctx, e.boot.ProjectID, c.ID); err != nil {
		t.Fatal(err)
	}
	e.deliver(ib, rawMail("secret@x", "password reset", "your code is 123456"))
	if err := <-got; ErrorCode(err) != EUnauthenticated {
		t.Fatalf("err %v, want unauthenticated", err)
	}
}

// A wait on a thread answers only that thread's messages, and moves its
// cursor past the others; direction filters too; deleted messages are
// left out.
func TestWaitForMessagesFilters(t *testing.T) {
	var waited <-chan struct{}
	e := newEnv(t, func(c *Config) { waited = waiting(c) })
	ib := e.boot.Inbox.ID
	root := e.deliver(ib, rawMail("root@x", "root", "b"))
	c := e.storedCaller(nil, "messages:read", "messages:delete")
	start, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{Timeout: "0"})
	if err != nil || len(start.Rows) != 0 {
		t.Fatal(start, err)
	}

	got := make(chan Arrivals, 1)
	go func() {
		a, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{ThreadID: root.ThreadID, After: start.Next, Timeout: "30"})
		if err != nil {
			t.Error(err)
		}
		got <- a
	}()
	<-waited
	e.deliver(ib, rawMail("elsewhere@x", "another thread", "b")) // the wait goes on
	<-waited
	out := e.sent(ib, "outbound") // a new thread of its own
	<-waited
	reply := e.deliver(ib, rawMail("reply@x", "Re: root", "b", "In-Reply-To: <root@x>\r\n"))
	a := <-got
	if fmt.Sprint(ids(a.Rows)) != fmt.Sprint([]string{reply.MessageID}) {
		t.Fatalf("thread wait: %v", ids(a.Rows))
	}

	in, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{After: start.Next, Direction: "outbound", Timeout: "0"})
	if err != nil || fmt.Sprint(ids(in.Rows)) != fmt.Sprint([]string{out}) {
		t.Fatalf("outbound: %v, %v", ids(in.Rows), err)
	}
	if err := e.app.DeleteMessage(e.ctx, c, ib, reply.MessageID); err != nil {
		t.Fatal(err)
	}
	all, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{After: start.Next, Direction: "inbound", Timeout: "0"})
	if err != nil || len(all.Rows) != 1 || all.Rows[0].Subject != "another thread" || all.Next != a.Next {
		t.Fatalf("inbound, the reply deleted: %v next %q (want %q), %v", ids(all.Rows), all.Next, a.Next, err)
	}
}

// Scope first, then the inbox and thread within the grant, then the
// parameters; a cursor that is not a position of the project's log is
// invalid_cursor naming after.
func TestWaitForMessagesChecks(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	other := e.inbox("other@example.com")
	theirs := e.deliver(other.ID, rawMail("o@x", "theirs", "b"))
	_, err := e.app.WaitForMessages(e.ctx, e.caller(nil, "threads:read"), "ibx_missing", WaitParams{Limit: "0"})
	wantError(t, err, EPermissionDenied, "")
	restricted := e.caller([]string{ib}, "messages:read")
	for _, p := range []struct {
		inbox string
		p     WaitParams
	}{
		{other.ID, WaitParams{}},
		{"ibx_missing", WaitParams{}},
		{ib, WaitParams{ThreadID: theirs.ThreadID}},
		{ib, WaitParams{ThreadID: "thd_missing"}},
	} {
		if _, err := e.app.WaitForMessages(e.ctx, restricted, p.inbox, p.p); ErrorCode(err) != ENotFound || ErrorMessage(err) != ErrNotFound.Message {
			t.Errorf("%+v: %v", p, err)
		}
	}
	for _, c := range []struct {
		p     WaitParams
		code  string
		param string
	}{
		{WaitParams{Limit: "0"}, EInvalidRequest, "limit"},
		{WaitParams{Limit: "101"}, EInvalidRequest, "limit"},
		{WaitParams{Timeout: "61"}, EInvalidRequest, "timeout_seconds"},
		{WaitParams{Timeout: "-1"}, EInvalidRequest, "timeout_seconds"},
		{WaitParams{Direction: "sideways"}, EInvalidRequest, "direction"},
		{WaitParams{After: "evc_bm9wZQ"}, EInvalidCursor, "after"},
		{WaitParams{After: e.cursor(99)}, EInvalidCursor, "after"}, // beyond the end
		{WaitParams{After: "garbage"}, EInvalidCursor, "after"},
	} {
		_, err := e.app.WaitForMessages(e.ctx, restricted, ib, c.p)
		wantError(t, err, c.code, c.param)
	}
}

// The drain and the caller's context end a wait at once, with the answer
// an expired wait gives: nothing, and the cursor it started from.
func TestWaitForMessagesEnds(t *testing.T) {
	var waited <-chan struct{}
	draining := make(chan struct{})
	e := newEnv(t, func(c *Config) { waited = waiting(c); c.Draining = draining })
	ib := e.boot.Inbox.ID
	c := e.caller(nil, "messages:read")
	start, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{Timeout: "0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Arrivals, 1)
	wait := func(ctx context.Context) {
		go func() {
			a, err := e.app.WaitForMessages(ctx, c, ib, WaitParams{After: start.Next, Timeout: "60"})
			if err != nil {
				t.Error(err)
			}
			done <- a
		}()
	}
	ended := func(by string) {
		t.Helper()
		select {
		case a := <-done:
			if len(a.Rows) != 0 || a.Next != start.Next {
				t.Errorf("ended by %s: %v next %q", by, ids(a.Rows), a.Next)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("a wait not ended by %s", by)
		}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	wait(ctx)
	<-waited
	cancel()
	ended("its context")
	wait(e.ctx)
	<-waited
	close(draining)
	ended("the drain")
}

// A wait whose context ends just as a commit wakes it ends as a context
// end does (no error), even when it was the commit that woke it: the
// query it runs then fails for the ended context alone. Which of the two
// wakes it is the select's choice, so the race is run twenty times.
func TestWaitEndsWhenCommitAndContextEndTogether(t *testing.T) {
	hold := make(chan chan struct{})
	e := newEnv(t, func(c *Config) {
		c.PollWaiting = func() { <-<-hold } // the test decides when the wait goes on
	})
	ib := e.boot.Inbox.ID
	c := e.caller(nil, "messages:read")
	for i := range 20 {
		start, err := e.app.WaitForMessages(e.ctx, c, ib, WaitParams{Timeout: "0"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(e.ctx)
		done := make(chan error, 1)
		go func() {
			_, err := e.app.WaitForMessages(ctx, c, ib, WaitParams{After: start.Next, Timeout: "60"})
			done <- err
		}()
		release := make(chan struct{})
		hold <- release // the wait has queried and is about to wait
		cancel()
		e.deliver(ib, rawMail(fmt.Sprintf("w%d@x", i), "both at once", "Hi.\r\n")) // a commit
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("round %d: the wait ended with %v, want no error", i, err)
		}
	}
}

// ReadThread is the thread-messages page with the thread row and the
// bodies, under the same checks.
func TestReadThread(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	root := e.deliver(ib, rawMail("r@x", "Plans", "First.\r\n"))
	reply := e.deliver(ib, rawMail("r2@x", "Re: Plans", "Second.\r\n\r\n> First.\r\n", "In-Reply-To: <r@x>\r\n"))
	// Messages need messages:read, the thread row threads:read (as the
	// REST routes for each).
	for _, scope := range []string{"threads:read", "messages:read"} {
		_, err := e.app.ReadThread(e.ctx, e.caller(nil, scope), ib, root.ThreadID, ThreadMessagesParams{})
		wantError(t, err, EPermissionDenied, "")
	}
	c := e.caller(nil, "messages:read", "threads:read")
	r, err := e.app.ReadThread(e.ctx, c, ib, root.ThreadID, ThreadMessagesParams{AfterSequence: "1", Wait: "60"})
	if err != nil || r.Thread.ID != root.ThreadID || r.Thread.Subject != "Plans" || fmt.Sprint(ids(r.Rows)) != fmt.Sprint([]string{reply.MessageID}) {
		t.Fatalf("read: %+v, %v", r, err)
	}
	for form, want := range map[string]string{BodyText: "Second.\n\n> First.", BodyExtracted: "Second."} {
		var b strings.Builder
		if ok, err := WriteBodyPart(e.ctx, &b, r.Bodies[reply.MessageID], form); !ok || err != nil || strings.TrimSpace(b.String()) != strings.TrimSpace(want) {
			t.Errorf("%s: %q %v %v", form, b.String(), ok, err)
		}
	}
	if ok, err := WriteBodyPart(e.ctx, &strings.Builder{}, r.Bodies[reply.MessageID], BodyHTML); ok || err != nil {
		t.Errorf("html of a text message: %v %v", ok, err)
	}
	if _, err := e.app.ReadThread(e.ctx, c, ib, "thd_missing", ThreadMessagesParams{}); ErrorCode(err) != ENotFound {
		t.Errorf("missing thread: %v", err)
	}
}
