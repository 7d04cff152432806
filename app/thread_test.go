package app

import (
	"context"
	"testing"
	"time"
)

// Every thread operation checks its scope before it looks at the inbox,
// the thread or the parameters.
func TestThreadOperationsNeedTheirScope(t *testing.T) {
	e := newEnv(t)
	threads, msgs := e.caller(nil, "threads:read"), e.caller(nil, "messages:read")
	bad := PageParams{Limit: "x", Cursor: "x"}
	for _, c := range []struct {
		scope string
		op    func() error
	}{
		{"threads:read", func() error {
			_, err := e.app.ListThreads(e.ctx, msgs, "ibx_missing", ThreadsParams{PageParams: bad, Q: `"`})
			return err
		}},
		{"threads:read", func() error { _, err := e.app.Thread(e.ctx, msgs, "ibx_missing", "thr_missing"); return err }},
		{"messages:read", func() error {
			_, err := e.app.ThreadMessages(threads, "ibx_missing", "thr_missing", ThreadMessagesParams{PageParams: bad, Wait: "61"})
			return err
		}},
	} {
		err := c.op()
		wantError(t, err, EPermissionDenied, "")
		if m := ErrorMessage(err); m != "This API key lacks the scope "+c.scope+"." {
			t.Errorf("%s: %q", c.scope, m)
		}
	}
}

// A thread of an inbox outside the caller's grant answers exactly like one
// that does not exist; ThreadMessages says so at its check, before it reads
// anything.
func TestThreadOutsideTheGrantIsNotFound(t *testing.T) {
	e := newEnv(t)
	other := e.inbox("other@example.com")
	d := e.deliver(other.ID, rawMail("o@x", "theirs", "b"))
	c := e.caller([]string{e.boot.Inbox.ID}, "threads:read", "messages:read")
	if _, err := e.app.ListThreads(e.ctx, c, other.ID, ThreadsParams{}); err != ErrNotFound {
		t.Errorf("list: %v", err)
	}
	if _, err := e.app.Thread(e.ctx, c, other.ID, d.ThreadID); err != ErrNotFound {
		t.Errorf("get: %v", err)
	}
	if read, err := e.app.ThreadMessages(c, other.ID, d.ThreadID, ThreadMessagesParams{}); err != ErrNotFound || read != nil {
		t.Errorf("messages: %v, %v", read, err)
	}
	// Within the grant, a thread of another inbox is not found either.
	read, err := e.app.ThreadMessages(c, e.boot.Inbox.ID, d.ThreadID, ThreadMessagesParams{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := read.Page(e.ctx); ErrorCode(err) != ENotFound || ErrorMessage(err) != "Resource not found." {
		t.Errorf("another inbox's thread: %v", err)
	}
	if _, err := e.app.Thread(e.ctx, c, e.boot.Inbox.ID, d.ThreadID); ErrorCode(err) != ENotFound {
		t.Errorf("get another inbox's thread: %v", err)
	}
}

// q is parsed by the store's rules; what it cannot parse is
// invalid_request naming q, once the inbox is known.
func TestListThreadsSearch(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	e.deliver(ib, rawMail("a@x", "Quarterly numbers", "b"))
	b := e.deliver(ib, rawMail("b@x", "Lunch on Friday", "b"))
	c := e.caller(nil, "threads:read")
	for q, msg := range map[string]string{`"lunch`: "q has an unbalanced double quote.", "\xff": "q must be UTF-8 text."} {
		_, err := e.app.ListThreads(e.ctx, c, ib, ThreadsParams{Q: q})
		wantError(t, err, EInvalidRequest, "q")
		if m := ErrorMessage(err); m != msg {
			t.Errorf("q %q: %q, want %q", q, m, msg)
		}
		if _, err := e.app.ListThreads(e.ctx, c, "ibx_missing", ThreadsParams{Q: q}); ErrorCode(err) != ENotFound {
			t.Errorf("q %q on a missing inbox: %v, want not found first", q, err)
		}
	}
	page, err := e.app.ListThreads(e.ctx, c, ib, ThreadsParams{Q: "friday"})
	if err != nil || len(page.Rows) != 1 || page.Rows[0].ID != b.ThreadID || page.HasMore {
		t.Errorf("q friday: %+v, %v", page, err)
	}
	// A cursor is bound to its search.
	page, err = e.app.ListThreads(e.ctx, c, ib, ThreadsParams{PageParams: PageParams{Limit: "1"}})
	if err != nil || !page.HasMore {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	_, err = e.app.ListThreads(e.ctx, c, ib, ThreadsParams{PageParams: PageParams{Cursor: page.Next}, Q: "friday"})
	wantError(t, err, EInvalidCursor, "cursor")
}

// The thread's messages come in sequence order, after after_sequence, in
// pages; the parameters are checked after the thread is found, in the
// order the API always had.
func TestThreadMessagesPages(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	root := e.deliver(ib, rawMail("r@x", "s", "one"))
	e.deliver(ib, rawMail("r2@x", "Re: s", "two", "In-Reply-To: <r@x>\r\n"))
	e.deliver(ib, rawMail("r3@x", "Re: s", "three", "In-Reply-To: <r2@x>\r\n"))
	c := e.caller(nil, "messages:read")
	page := func(p ThreadMessagesParams, threadID string) (Messages, error) {
		read, err := e.app.ThreadMessages(c, ib, threadID, p)
		if err != nil {
			t.Fatal(err)
		}
		return read.Page(e.ctx)
	}
	for _, x := range []struct {
		p      ThreadMessagesParams
		thread string
		code   string
		param  string
	}{
		{ThreadMessagesParams{PageParams: PageParams{Limit: "0"}, Wait: "x"}, "thr_missing", ENotFound, ""},
		{ThreadMessagesParams{PageParams: PageParams{Limit: "101"}, Wait: "61"}, root.ThreadID, EInvalidRequest, "limit"},
		{ThreadMessagesParams{Wait: "61", AfterSequence: "-1"}, root.ThreadID, EInvalidRequest, "wait"},
		{ThreadMessagesParams{Wait: "-1"}, root.ThreadID, EInvalidRequest, "wait"},
		{ThreadMessagesParams{AfterSequence: "-1", PageParams: PageParams{Cursor: "x"}}, root.ThreadID, EInvalidRequest, "after_sequence"},
		{ThreadMessagesParams{PageParams: PageParams{Cursor: "x"}}, root.ThreadID, EInvalidCursor, "cursor"},
	} {
		_, err := page(x.p, x.thread)
		if x.code == ENotFound {
			if ErrorCode(err) != ENotFound {
				t.Errorf("%+v: %v, want not found", x.p, err)
			}
			continue
		}
		wantError(t, err, x.code, x.param)
	}
	first, err := page(ThreadMessagesParams{PageParams: PageParams{Limit: "2"}}, root.ThreadID)
	if err != nil || len(first.Rows) != 2 || first.Rows[0].Sequence != 1 || first.Rows[1].Sequence != 2 || !first.HasMore || first.Inbox.ID != ib {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	rest, err := page(ThreadMessagesParams{PageParams: PageParams{Limit: "2", Cursor: first.Next}}, root.ThreadID)
	if err != nil || len(rest.Rows) != 1 || rest.Rows[0].Sequence != 3 || rest.HasMore || rest.Next != "" {
		t.Fatalf("second page: %+v, %v", rest, err)
	}
	after, err := page(ThreadMessagesParams{AfterSequence: "2"}, root.ThreadID)
	if err != nil || len(after.Rows) != 1 || after.Rows[0].Sequence != 3 {
		t.Errorf("after_sequence=2: %+v, %v", after, err)
	}
	// A cursor of another thread's list is refused.
	other := e.deliver(ib, rawMail("o@x", "other", "b"))
	_, err = page(ThreadMessagesParams{PageParams: PageParams{Limit: "2", Cursor: first.Next}}, other.ThreadID)
	wantError(t, err, EInvalidCursor, "cursor")
}

// A read is cacheable when its page depends on the database alone, and
// its key holds everything the page depends on and nothing else.
func TestThreadMessagesCacheKey(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	read := func(c Caller, thread string, p ThreadMessagesParams) *ThreadMessagesRead {
		r, err := e.app.ThreadMessages(c, ib, thread, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := e.caller(nil, "messages:read"), e.caller([]string{ib}, "messages:read", "threads:read")
	for _, p := range []ThreadMessagesParams{{}, {Wait: "0"}, {Wait: "00", AfterSequence: "3"}, {PageParams: PageParams{Limit: "5"}}} {
		if !read(a, "thr_1", p).Cacheable() {
			t.Errorf("%+v: not cacheable", p)
		}
	}
	for _, p := range []ThreadMessagesParams{{Wait: "1"}, {Wait: "x"}, {PageParams: PageParams{Cursor: "c"}}} {
		if read(a, "thr_1", p).Cacheable() {
			t.Errorf("%+v: cacheable", p)
		}
	}
	key := read(a, "thr_1", ThreadMessagesParams{PageParams: PageParams{Limit: "5"}, AfterSequence: "2"}).CacheKey()
	if k := read(b, "thr_1", ThreadMessagesParams{PageParams: PageParams{Limit: "5"}, AfterSequence: "2", Wait: "0"}).CacheKey(); k != key {
		t.Errorf("another caller, the same page: key %q, want %q", k, key)
	}
	for _, r := range []*ThreadMessagesRead{
		read(a, "thr_2", ThreadMessagesParams{PageParams: PageParams{Limit: "5"}, AfterSequence: "2"}),
		read(a, "thr_1", ThreadMessagesParams{PageParams: PageParams{Limit: "6"}, AfterSequence: "2"}),
		read(a, "thr_1", ThreadMessagesParams{PageParams: PageParams{Limit: "5"}}),
	} {
		if r.CacheKey() == key {
			t.Errorf("%+v: the same key as another page", r.p)
		}
	}
}

// A long-poll answers as soon as a message with a higher sequence
// arrives; the drain and the end of the caller's context end it at once
// with the empty page an expired wait gives.
func TestThreadMessagesLongPoll(t *testing.T) {
	draining := make(chan struct{})
	var waited <-chan struct{}
	e := newEnv(t, func(c *Config) { waited = waiting(c); c.Draining = draining })
	ib := e.boot.Inbox.ID
	root := e.deliver(ib, rawMail("lp@x", "s", "one"))
	c := e.storedCaller(nil, "messages:read")
	poll := func(ctx context.Context) <-chan Messages {
		read, err := e.app.ThreadMessages(c, ib, root.ThreadID, ThreadMessagesParams{AfterSequence: "1", Wait: "60"})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan Messages, 1)
		go func() {
			page, err := read.Page(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- page
		}()
		return got
	}

	got := poll(e.ctx)
	<-waited
	reply := e.deliver(ib, rawMail("lp2@x", "Re: s", "two", "In-Reply-To: <lp@x>\r\n"))
	if page := <-got; len(page.Rows) != 1 || page.Rows[0].ID != reply.MessageID {
		t.Errorf("woken by the reply: %+v", page)
	}

	// From here on the polls read after the reply: nothing arrives.
	ctx, cancel := context.WithCancel(e.ctx)
	read, err := e.app.ThreadMessages(c, ib, root.ThreadID, ThreadMessagesParams{AfterSequence: "2", Wait: "60"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		page, err := read.Page(ctx)
		if err == nil && len(page.Rows) != 0 {
			t.Errorf("ended by its context: %+v", page)
		}
		done <- err
	}()
	// An ended poll answers at once; one that went on would answer only
	// at its 60 s deadline.
	ended := func(by string) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ended by %s: %v", by, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("a long-poll not ended by %s", by)
		}
	}
	<-waited
	cancel()
	ended("its context")

	go func() {
		page, err := read.Page(e.ctx)
		if err == nil && (len(page.Rows) != 0 || page.HasMore) {
			t.Errorf("ended by the drain: %+v", page)
		}
		done <- err
	}()
	<-waited
	close(draining)
	ended("the drain")
	// During the drain a long-poll does not wait.
	if page, err := read.Page(e.ctx); err != nil || len(page.Rows) != 0 {
		t.Errorf("during the drain: %+v, %v", page, err)
	}
}
