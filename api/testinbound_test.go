package api

import (
	"context"
	"testing"

	"github.com/inboxd/inboxd/store"
)

func TestSimulatedInbound(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	test, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "qa@localhost", Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	sent := e.sendReq(e.admin, test.ID, "", `{"to":["supplier@example.com"],"subject":"Quote?","text":"Price for 100 chairs?"}`).json(t)
	msg := e.get(e.admin, e.path("/inboxes/%s/messages/%s", test.ID, sent["message_id"])).json(t)
	if msg["state"] != "captured" || msg["environment"] != "test" {
		t.Fatalf("test inbox send: %v", msg)
	}
	r := e.do(e.admin, "POST", e.path("/test/inbound"), `{"inbox_id":"`+test.ID+`","from":"Supplier <supplier@example.com>",
		"subject":"Re: Quote?","text":"42 EUR each.","in_reply_to":"`+msg["rfc_message_id"].(string)+`"}`)
	if r.status != 201 {
		t.Fatalf("simulated inbound: %d %s", r.status, r.body)
	}
	got := r.json(t)
	if got["thread_id"] != sent["thread_id"] {
		t.Fatalf("reply did not join the thread: %v vs %v", got, sent)
	}
	m := e.get(e.admin, e.path("/inboxes/%s/messages/%s", test.ID, got["message_id"])).json(t)
	if m["simulated"] != true || m["thread_match"] != "in_reply_to" || m["from"].(map[string]any)["name"] != "Supplier" {
		t.Fatalf("simulated message: %v", m)
	}
	ev := e.events(e.admin, "type=message.received")
	if len(ev.Data) != 1 || ev.Data[0].Data["simulated"] != true {
		t.Fatalf("event: %+v", ev)
	}
	// Raw form: id-less bytes twice are two messages; the same message
	// with its Message-ID twice is a duplicate naming the stored copy.
	for range 2 {
		if r := e.do(e.admin, "POST", e.path("/test/inbound"), `{"inbox_id":"`+test.ID+`","raw":"From: a@b.c\r\nSubject: raw\r\n\r\nbody\r\n"}`); r.status != 201 {
			t.Fatalf("raw: %d %s", r.status, r.body)
		}
	}
	withID := `{"inbox_id":"` + test.ID + `","raw":"From: a@b.c\r\nMessage-ID: <raw-1@b.c>\r\nSubject: raw\r\n\r\nbody\r\n"}`
	first := e.do(e.admin, "POST", e.path("/test/inbound"), withID)
	again := e.do(e.admin, "POST", e.path("/test/inbound"), withID)
	if first.status != 201 || again.status != 200 {
		t.Fatalf("raw with id twice: %d %s, then %d %s", first.status, first.body, again.status, again.body)
	}
	if f, a := first.json(t), again.json(t); a["result"] != "duplicate" || a["message_id"] != f["message_id"] || a["thread_id"] != f["thread_id"] {
		t.Fatalf("duplicate answer %v for %v", a, f)
	}
	// The refusals.
	if r := e.do(e.admin, "POST", e.path("/test/inbound"), `{"inbox_id":"`+e.boot.Inbox.ID+`","raw":"Subject: x\r\n\r\ny"}`); r.status != 400 {
		t.Fatalf("live inbox: %d %s", r.status, r.body)
	}
	if r := e.do(e.key([]string{"messages:read"}, nil), "POST", e.path("/test/inbound"), `{"inbox_id":"`+test.ID+`","raw":"x"}`); r.status != 403 {
		t.Fatalf("without test:write: %d", r.status)
	}
}
