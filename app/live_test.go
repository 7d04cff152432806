package app

import "testing"

// The tail of the log is where only later events are read; each event's
// cursor resumes right after it.
func TestEventsTail(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	e.deliver(ib, rawMail("e1@x", "one", "b"))
	if _, err := e.app.EventsTail(e.ctx, e.caller(nil, "messages:read")); ErrorCode(err) != EPermissionDenied {
		t.Errorf("without events:read: %v", err)
	}
	c := e.caller(nil, "events:read")
	tail, err := e.app.EventsTail(e.ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	page, err := e.app.Events(e.ctx, c, EventsParams{After: tail})
	if err != nil || len(page.Events) != 0 {
		t.Fatalf("after the tail: %+v %v", page, err)
	}
	e.deliver(ib, rawMail("e2@x", "two", "b"))
	e.deliver(ib, rawMail("e3@x", "three", "b"))
	page, err = e.app.Events(e.ctx, c, EventsParams{After: tail})
	if err != nil || len(page.Events) != 2 {
		t.Fatalf("two events after the tail: %+v %v", page, err)
	}
	rest, err := e.app.Events(e.ctx, c, EventsParams{After: EventCursor(page.Events[0])})
	if err != nil || len(rest.Events) != 1 || rest.Events[0].Seq != page.Events[1].Seq {
		t.Errorf("after the first event's cursor: %+v %v", rest, err)
	}
}

// RecentEvents pages the log backwards, newest first, with Events'
// filters and checks.
func TestRecentEvents(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	other := e.inbox("other@localhost")
	for _, id := range []string{"r1@x", "r2@x", "r3@x"} {
		e.deliver(ib, rawMail(id, "s", "b"))
	}
	e.deliver(other.ID, rawMail("r4@x", "s", "b"))
	if _, _, err := e.app.RecentEvents(e.ctx, e.caller(nil, "messages:read"), RecentEventsParams{}); ErrorCode(err) != EPermissionDenied {
		t.Errorf("without events:read: %v", err)
	}
	c := e.caller(nil, "events:read")
	for _, p := range []RecentEventsParams{{Before: "evc_x"}, {Types: []string{"message.nope"}}, {Limit: "0"}} {
		if _, _, err := e.app.RecentEvents(e.ctx, c, p); ErrorCode(err) != EInvalidRequest && ErrorCode(err) != EInvalidCursor {
			t.Errorf("%+v: %v", p, err)
		}
	}
	seqs := func(events []Event) (out []int64) {
		for _, ev := range events {
			out = append(out, ev.Seq)
		}
		return out
	}
	newest, older, err := e.app.RecentEvents(e.ctx, c, RecentEventsParams{Limit: "2", InboxID: ib, Types: []string{"message.received"}})
	if err != nil || len(newest) != 2 || newest[0].Seq <= newest[1].Seq || older == "" {
		t.Fatalf("the newest two: %v %q %v", seqs(newest), older, err)
	}
	rest, older, err := e.app.RecentEvents(e.ctx, c, RecentEventsParams{Limit: "2", InboxID: ib, Before: older})
	if err != nil || len(rest) != 1 || rest[0].Seq >= newest[1].Seq || older != "" {
		t.Errorf("the oldest: %v %q %v", seqs(rest), older, err)
	}
	restricted := e.caller([]string{other.ID}, "events:read")
	if got, _, err := e.app.RecentEvents(e.ctx, restricted, RecentEventsParams{}); err != nil || len(got) != 1 {
		t.Errorf("a key of the other inbox sees %v (%v)", seqs(got), err)
	}
}
