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
