package api

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

func evc(seq int64) string {
	return "evc_" + base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d", seq))
}

// evc is the cursor at the nth event of the env's log: a log counts on
// from where its start put the counter (store.Open), not from 0.
func (e *env) evc(n int64) string {
	e.t.Helper()
	p := e.events(e.admin, "limit=1")
	if len(p.Data) != 1 {
		e.t.Fatalf("the log's first event: %+v", p)
	}
	return evc(p.Data[0].Sequence - 1 + n)
}

// TestEventCursorIsAPosition: a cursor that is not a position in the
// key's project's log is 400 invalid_cursor (SPEC §8).
func TestEventCursorIsAPosition(t *testing.T) {
	e := newEnv(t, Config{})
	e.execAside(`INSERT INTO projects (id, name, created_at) VALUES ('prj_other', 'other', 0)`)
	e.execAside(`INSERT INTO inboxes (id, project_id, address, created_at) VALUES ('ibx_other', 'prj_other', 'x@other.example', 0)`)
	for i := range 3 {
		e.deliver(e.boot.Inbox.ID, rawMail(fmt.Sprintf("c%d@x", i), "s", "b"))
	}
	e.deliver("ibx_other", rawMail("foreign@x", "s", "b")) // seq 4, another project's
	e.deliver(e.boot.Inbox.ID, rawMail("c3@x", "s", "b"))  // seq 5
	p := e.events(e.admin, "")
	if len(p.Data) != 4 || p.NextCursor != e.evc(5) {
		t.Fatalf("log: %d events, next %s", len(p.Data), p.NextCursor)
	}
	for _, c := range []string{evc(0), e.evc(1), e.evc(3), e.evc(5)} {
		if r := e.get(e.admin, e.path("/events?after=%s", url.QueryEscape(c))); r.status != 200 {
			t.Errorf("after=%s (a position): %d %s", c, r.status, r.body)
		}
	}
	for _, c := range []string{e.evc(4), e.evc(6), e.evc(1 << 40), "evc_" + "!!", "evc_", e.evc(5) + "x", "bogus"} {
		r := e.get(e.admin, e.path("/events?after=%s", url.QueryEscape(c)))
		if code, param := errParam(t, r); r.status != 400 || code != "invalid_cursor" || param != "after" {
			t.Errorf("after=%s: %d %s, want 400 invalid_cursor", c, r.status, r.body)
		}
	}
}

// TestEventCursorAdvancesPastSkipped: a filtered page moves the cursor
// to the last event it examined, and filtered paging neither repeats nor
// skips a match.
func TestEventCursorAdvancesPastSkipped(t *testing.T) {
	e := newEnv(t, Config{})
	b, err := e.db.CreateInbox(t.Context(), e.boot.ProjectID, store.NewInbox{Address: "b@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	var wantA []string
	for i := range 7 {
		wantA = append(wantA, e.deliver(e.boot.Inbox.ID, rawMail(fmt.Sprintf("a%d@x", i), "s", "b")).MessageID)
		e.deliver(b.ID, rawMail(fmt.Sprintf("b%d@x", i), "s", "b"))
	}
	// Nothing matches: the cursor still moves to the end of the log.
	p := e.events(e.admin, "type=message.queued")
	if len(p.Data) != 0 || p.HasMore || p.NextCursor != e.evc(14) {
		t.Fatalf("no match: %+v, want next_cursor %s", p, e.evc(14))
	}
	// And from there the next match is found.
	// The send appends message.queued (15) and message.captured (16).
	q := e.sendReq(e.admin, e.boot.Inbox.ID, "", `{"to":["a@example.com"],"text":"t"}`).json(t)
	p = e.events(e.admin, "type=message.queued&after="+url.QueryEscape(p.NextCursor))
	if len(p.Data) != 1 || p.Data[0].Data["message_id"] != q["message_id"] || p.NextCursor != e.evc(16) {
		t.Fatalf("after the cursor: %+v", p)
	}
	// ?type= is the one parameter that may be given more than once.
	if p := e.events(e.admin, "type=message.queued&type=message.captured"); len(p.Data) != 2 ||
		p.Data[0].Type != "message.queued" || p.Data[1].Type != "message.captured" {
		t.Fatalf("two types: %+v", p)
	}
	// Paging inbox A's events two at a time across B's.
	var got []string
	cursor := ""
	for range 20 {
		p := e.events(e.admin, "limit=2&type=message.received&inbox_id="+e.boot.Inbox.ID+"&after="+url.QueryEscape(cursor))
		for _, ev := range p.Data {
			got = append(got, ev.Data["message_id"].(string))
		}
		if p.NextCursor == cursor && p.HasMore {
			t.Fatal("has_more without progress")
		}
		cursor = p.NextCursor
		if !p.HasMore {
			break
		}
	}
	if !slices.Equal(got, wantA) {
		t.Errorf("paged %v, want %v", got, wantA)
	}
	if cursor != e.evc(16) {
		t.Errorf("last cursor %s, want %s (the last event examined)", cursor, e.evc(16))
	}
}

// TestEventScanBound: a read examines at most the scan bound; a filter
// that matches nothing answers with the position reached and has_more,
// at once even when asked to wait.
func TestEventScanBound(t *testing.T) {
	waited := make(chan struct{}, 100)
	e := newEnvWith(t, Config{}, app.Config{EventScan: 3, PollWaiting: func() { waited <- struct{}{} }})
	for i := range 8 {
		e.deliver(e.boot.Inbox.ID, rawMail(fmt.Sprintf("s%d@x", i), "s", "b"))
	}
	var cursors []string
	cursor := ""
	for range 10 {
		p := e.events(e.admin, "type=message.queued&after="+url.QueryEscape(cursor))
		if len(p.Data) != 0 {
			t.Fatalf("matched %+v", p.Data)
		}
		cursor = p.NextCursor
		cursors = append(cursors, cursor)
		if !p.HasMore {
			break
		}
	}
	if want := []string{e.evc(3), e.evc(6), e.evc(8)}; !slices.Equal(cursors, want) {
		t.Errorf("cursors %v, want %v", cursors, want)
	}
	if p := e.events(e.admin, "wait=30&type=message.queued"); len(p.Data) != 0 || !p.HasMore || p.NextCursor != e.evc(3) {
		t.Errorf("a wait from the start: %+v, want an empty page at %s with has_more", p, e.evc(3))
	}
	select {
	case <-waited:
		t.Error("a read stopped by the scan bound waited")
	default:
	}
	// At the end of the log the wait works, filters and all.
	got := make(chan eventPage, 1)
	go func() { got <- e.events(e.admin, "wait=30&type=message.queued&after="+url.QueryEscape(cursor)) }()
	<-waited
	e.deliver(e.boot.Inbox.ID, rawMail("skip@x", "s", "b")) // not matching: the poll goes on waiting
	<-waited
	// message.queued (10) and message.captured (11) commit together: the
	// poll examines both.
	q := e.sendReq(e.admin, e.boot.Inbox.ID, "", `{"to":["a@example.com"],"text":"t"}`).json(t)
	p := <-got
	if len(p.Data) != 1 || p.Data[0].Data["message_id"] != q["message_id"] || p.NextCursor != e.evc(11) {
		t.Errorf("wait answered %+v, want the queued event, cursor at %s", p, e.evc(11))
	}
}
