package api

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

type eventPage struct {
	Data []struct {
		ID, Type, Environment string
		APIVersion            string `json:"api_version"`
		Sequence              int64
		OccurredAt            string `json:"occurred_at"`
		Data                  map[string]any
	}
	NextCursor string `json:"next_cursor"`
	HasMore    bool   `json:"has_more"`
}

func (e *env) events(token, query string) eventPage {
	e.t.Helper()
	var p eventPage
	r := e.get(token, e.path("/events?%s", query))
	if r.status != 200 {
		e.t.Fatalf("events: %d %s", r.status, r.body)
	}
	if err := jsonUnmarshal(r.body, &p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func TestEventLogAndResume(t *testing.T) {
	e := newEnv(t, Config{})
	d := e.deliver(e.boot.Inbox.ID, rawMail("first@x", "s", "b"))
	p := e.events(e.admin, "")
	if len(p.Data) != 1 || p.Data[0].Type != "message.received" || p.Data[0].APIVersion != "2026-12-01" ||
		p.Data[0].Data["message_id"] != d.MessageID || p.Data[0].Data["thread_id"] != d.ThreadID || p.Data[0].Data["sequence"] != 1.0 ||
		p.Data[0].Data["direction"] != "inbound" || p.Data[0].Data["environment"] != "live" || p.Data[0].Data["simulated"] != false ||
		p.Data[0].Environment != "live" || p.NextCursor == "" {
		t.Fatalf("first page: %+v", p)
	}
	// Thin payloads: no subject, no sender, no body.
	for _, k := range []string{"subject", "from", "text"} {
		if _, ok := p.Data[0].Data[k]; ok {
			t.Errorf("event data carries %s", k)
		}
	}
	stored := p.NextCursor
	for i := range 500 {
		e.deliver(e.boot.Inbox.ID, rawMail(fmt.Sprintf("m%d@x", i), "s", "b"))
	}
	var seen []string
	cursor := stored
	for {
		p := e.events(e.admin, "limit=100&after="+url.QueryEscape(cursor))
		for _, ev := range p.Data {
			seen = append(seen, ev.Data["message_id"].(string))
		}
		cursor = p.NextCursor
		if !p.HasMore {
			break
		}
	}
	msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
	if len(seen) != 500 || seen[0] != msgs[499].ID || seen[499] != msgs[0].ID {
		t.Fatalf("resumed and saw %d events", len(seen))
	}
	// At the end the cursor stays put: never null.
	if p := e.events(e.admin, "after="+url.QueryEscape(cursor)); len(p.Data) != 0 || p.NextCursor != cursor {
		t.Fatalf("empty page: %+v", p)
	}
	if r := e.get(e.admin, e.path("/events?after=bogus")); r.status != 400 {
		t.Errorf("bad cursor: %d", r.status)
	}
}

func TestEventsWaitAndFilters(t *testing.T) {
	e := newEnv(t, Config{})
	other, _ := e.db.CreateInbox(context.Background(), e.boot.ProjectID, store.NewInbox{Address: "other@localhost"})
	e.deliver(other.ID, rawMail("o@x", "s", "b"))
	onlyMine := e.key([]string{"events:read"}, []string{e.boot.Inbox.ID})
	if p := e.events(onlyMine, ""); len(p.Data) != 0 {
		t.Fatalf("restricted key saw another inbox's events: %+v", p)
	}
	start := e.events(onlyMine, "").NextCursor
	got := make(chan eventPage, 1)
	began := time.Now()
	go func() { got <- e.events(onlyMine, "wait=30&after="+url.QueryEscape(start)) }()
	e.deliver(other.ID, rawMail("o2@x", "s", "b")) // not visible: must not answer the poll
	d := e.deliver(e.boot.Inbox.ID, rawMail("mine@x", "s", "b"))
	p := <-got
	if len(p.Data) != 1 || p.Data[0].Data["message_id"] != d.MessageID {
		t.Fatalf("wait answered %+v", p)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("wait took %v", took)
	}
	if p := e.events(e.admin, "type=message.queued"); len(p.Data) != 0 {
		t.Errorf("type filter: %+v", p)
	}
	if p := e.events(e.admin, "inbox_id="+other.ID); len(p.Data) != 2 {
		t.Errorf("inbox filter: %d", len(p.Data))
	}
	if r := e.get(onlyMine, e.path("/events?inbox_id=%s", other.ID)); r.status != 404 {
		t.Errorf("foreign inbox filter: %d", r.status)
	}
}

func TestApprovalEvents(t *testing.T) {
	e := newEnv(t, Config{})
	e.do(e.admin, "PATCH", e.path("/inboxes/%s", e.boot.Inbox.ID), `{"send_policy":"approve_all"}`)
	held := e.sendReq(e.admin, e.boot.Inbox.ID, "", `{"to":["a@example.com"],"text":"x"}`).json(t)
	e.do(e.admin, "POST", e.path("/inboxes/%s/approvals/%s/approve", e.boot.Inbox.ID, held["approval_id"]), "")
	p := e.events(e.admin, "")
	var types []string
	for i, ev := range p.Data {
		types = append(types, ev.Type)
		if i > 0 && ev.Sequence <= p.Data[i-1].Sequence {
			t.Fatalf("event %d has sequence %d after %d", i, ev.Sequence, p.Data[i-1].Sequence)
		}
	}
	// The decision comes before the send it releases (SPEC §8).
	want := []string{"approval.requested", "approval.approved", "message.queued", "message.captured"}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	a, q := p.Data[1].Data, p.Data[2].Data
	for _, d := range []map[string]any{a, q} {
		if d["approval_id"] != held["approval_id"] || d["draft_id"] != held["draft_id"] {
			t.Fatalf("approved %v / queued %v lack approval_id %v, draft_id %v", a, q, held["approval_id"], held["draft_id"])
		}
	}
	if a["message_id"] != q["message_id"] || a["thread_id"] != q["thread_id"] || q["message_id"] == nil {
		t.Fatalf("approved %v / queued %v name different messages", a, q)
	}
}
