package app

import (
	"fmt"
	"testing"
	"time"
)

func TestEventCursorRoundTrip(t *testing.T) {
	for _, seq := range []int64{0, 1, 4096, 1 << 50} {
		if got, ok := parseEventCursor(eventCursor(seq)); !ok || got != seq {
			t.Errorf("%d: parsed %d, %v", seq, got, ok)
		}
	}
	for _, c := range []string{"", "evc_", "evc_!!", "bogus", eventCursor(5) + "x", "evc_" + "LTE"} { // LTE: "-1"
		if _, ok := parseEventCursor(c); ok {
			t.Errorf("%q parsed", c)
		}
	}
}

// The scope first; then limit, wait, after (a position of the log), type
// and inbox_id, in the order the API always had, with its messages.
func TestEventsParameters(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	other := e.inbox("other@example.com")
	for i := range 3 {
		e.deliver(ib, rawMail(fmt.Sprintf("e%d@x", i), "s", "b"))
	}
	_, err := e.app.Events(e.ctx, e.caller(nil, "messages:read"), EventsParams{Limit: "x"})
	wantError(t, err, EPermissionDenied, "")
	c := e.caller([]string{ib}, "events:read")
	for _, x := range []struct {
		p           EventsParams
		code, param string
		message     string
	}{
		{EventsParams{Limit: "101", Wait: "61", After: "x"}, EInvalidRequest, "limit", "limit must be an integer from 1 to 100."},
		{EventsParams{Wait: "61", After: "x"}, EInvalidRequest, "wait", "wait must be an integer number of seconds from 0 to 60."},
		{EventsParams{After: "x", Types: []string{"nope"}}, EInvalidCursor, "after", "Cursor is invalid, expired, or belongs to another filter."},
		{EventsParams{After: e.cursor(4), Types: []string{"nope"}}, EInvalidCursor, "after", "Cursor is invalid, expired, or belongs to another filter."},
		{EventsParams{After: e.cursor(3), Types: []string{"message.received,nope"}, InboxID: other.ID}, EInvalidRequest, "type", `Unknown event type "nope".`},
	} {
		_, err := e.app.Events(e.ctx, c, x.p)
		wantError(t, err, x.code, x.param)
		if m := ErrorMessage(err); m != x.message {
			t.Errorf("%+v: %q, want %q", x.p, m, x.message)
		}
	}
	if _, err := e.app.Events(e.ctx, c, EventsParams{InboxID: other.ID}); err != ErrNotFound {
		t.Errorf("inbox_id outside the grant: %v", err)
	}
	p, err := e.app.Events(e.ctx, c, EventsParams{After: e.cursor(1), Types: []string{"message.received", "message.queued"}, InboxID: ib})
	if err != nil || len(p.Events) != 2 || p.Events[0].Seq != e.seq(2) || p.Next != e.cursor(3) || p.HasMore {
		t.Errorf("after 1: %+v, %v", p, err)
	}
}

// A restricted caller reads its inboxes' events only; the cursor still
// moves past the others (SPEC §8).
func TestEventsOfTheGrant(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	other := e.inbox("other@example.com")
	e.deliver(ib, rawMail("m@x", "s", "b"))
	e.deliver(other.ID, rawMail("o@x", "s", "b"))
	p, err := e.app.Events(e.ctx, e.caller([]string{ib}, "events:read"), EventsParams{})
	if err != nil || len(p.Events) != 1 || p.Events[0].InboxID != ib || p.Next != e.cursor(2) {
		t.Fatalf("restricted: %+v, %v", p, err)
	}
	all, err := e.app.Events(e.ctx, e.caller(nil, "events:read"), EventsParams{})
	if err != nil || len(all.Events) != 2 {
		t.Errorf("unrestricted: %+v, %v", all, err)
	}
}

// A read examines at most the scan bound and answers at once with the
// position reached even when asked to wait; at the end of the log the wait
// goes on past events that do not match, until one does.
func TestEventsScanAndWait(t *testing.T) {
	var waited <-chan struct{}
	e := newEnv(t, func(c *Config) { waited = waiting(c); c.EventScan = 3 })
	ib := e.boot.Inbox.ID
	for i := range 5 {
		e.deliver(ib, rawMail(fmt.Sprintf("s%d@x", i), "s", "b"))
	}
	c := e.storedCaller(nil, "events:read")
	p, err := e.app.Events(e.ctx, c, EventsParams{Types: []string{"message.queued"}, Wait: "30"})
	if err != nil || len(p.Events) != 0 || p.Next != e.cursor(3) || !p.HasMore {
		t.Fatalf("a wait from the start: %+v, %v; want an empty page at 3 with has_more", p, err)
	}
	select {
	case <-waited:
		t.Fatal("a read stopped by the scan bound waited")
	default:
	}
	p, err = e.app.Events(e.ctx, c, EventsParams{After: p.Next, Types: []string{"message.queued"}})
	if err != nil || len(p.Events) != 0 || p.Next != e.cursor(5) || p.HasMore {
		t.Fatalf("read on: %+v, %v; want an empty page at the end, 5", p, err)
	}

	other := e.inbox("other@example.com")
	got, at5 := make(chan EventPage, 1), e.cursor(5)
	go func() {
		p, err := e.app.Events(e.ctx, c, EventsParams{After: at5, Types: []string{"message.received"}, InboxID: ib, Wait: "30"})
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	<-waited
	e.deliver(other.ID, rawMail("skip@x", "s", "b")) // another inbox's: the wait goes on
	<-waited
	d := e.deliver(ib, rawMail("hit@x", "s", "b"))
	p = <-got
	if len(p.Events) != 1 || p.Events[0].Seq != e.seq(7) || p.Next != e.cursor(7) {
		t.Errorf("woken by %s: %+v", d.MessageID, p)
	}
}

// A cursor behind events retention removed unread is invalid_cursor (its
// reader missed them); one at the last pruned event missed nothing and
// reads on (SPEC §8: valid for the retention period), as does one at a
// retained event.
func TestEventCursorOlderThanTheLog(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	for i := range 4 {
		e.deliver(ib, rawMail(fmt.Sprintf("r%d@x", i), "s", "b"))
	}
	c := e.caller(nil, "events:read", "messages:read")
	var cursors []string // after each of the first three events
	for after := ""; len(cursors) < 3; {
		p, err := e.app.Events(e.ctx, c, EventsParams{Limit: "1", After: after})
		if err != nil {
			t.Fatal(err)
		}
		after = p.Next
		cursors = append(cursors, after)
	}
	if n, err := e.db.PruneEvents(e.ctx, e.clock.Now().Add(time.Hour), 2); err != nil || n != 2 {
		t.Fatalf("prune: %d %v", n, err)
	}
	_, err := e.app.Events(e.ctx, c, EventsParams{After: cursors[0]})
	wantError(t, err, EInvalidCursor, "after")
	for i, want := range map[int]int{1: 2, 2: 1} {
		if p, err := e.app.Events(e.ctx, c, EventsParams{After: cursors[i]}); err != nil || len(p.Events) != want {
			t.Errorf("after the %d. event: %+v %v, want %d events", i+1, p, err, want)
		}
	}
}
