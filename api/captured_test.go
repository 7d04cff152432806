package api

import (
	"fmt"
	"net/http"
	"testing"
)

// A captured send (the default outbound mode) has a terminal event:
// message.captured after message.queued, listing the captured recipients
// like the other delivery events (SPEC §8); webhooks may subscribe to it.
func TestCapturedSendEvents(t *testing.T) {
	e := newEnv(t, Config{})
	r := e.do(e.admin, "POST", e.path("/webhooks"), `{"url":"https://example.com/hook","event_types":["message.captured"]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("webhook for message.captured: %d %s", r.status, r.body)
	}
	hook := r.json(t)["id"]
	sent := e.sendReq(e.admin, e.boot.Inbox.ID, "", `{"to":["a@example.com"],"cc":["b@example.com"],"text":"x"}`).json(t)
	p := e.events(e.admin, "")
	if len(p.Data) != 2 || p.Data[0].Type != "message.queued" || p.Data[1].Type != "message.captured" || p.Data[1].Sequence <= p.Data[0].Sequence {
		t.Fatalf("events: %+v", p.Data)
	}
	c := p.Data[1].Data
	if c["message_id"] != sent["message_id"] || c["thread_id"] != sent["thread_id"] || c["direction"] != "outbound" || c["sequence"] != 1.0 {
		t.Fatalf("captured event: %v for %v", c, sent)
	}
	want := `[map[delivery_status:captured email:a@example.com smtp_code:<nil> smtp_message:<nil>] map[delivery_status:captured email:b@example.com smtp_code:<nil> smtp_message:<nil>]]`
	if got := fmt.Sprint(c["recipients"]); got != want {
		t.Fatalf("recipients %s, want %s", got, want)
	}
	if p := e.events(e.admin, "type=message.captured"); len(p.Data) != 1 {
		t.Fatalf("type filter message.captured: %+v", p.Data)
	}
	dl := e.get(e.admin, e.path("/webhooks/%s/deliveries", hook)).json(t)["data"].([]any)
	if len(dl) != 1 || dl[0].(map[string]any)["event_type"] != "message.captured" {
		t.Fatalf("webhook deliveries: %v", dl)
	}
}
