package api

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/store"
)

// TestWebhookCreateEnabled: create takes enabled (default true); a
// disabled endpoint gets no deliveries; new ids are whk_ (SPEC §1, §9).
func TestWebhookCreateEnabled(t *testing.T) {
	e := newEnv(t, Config{})
	create := func(body string) map[string]any {
		t.Helper()
		r := e.do(e.admin, "POST", e.path("/webhooks"), body)
		if r.status != http.StatusCreated {
			t.Fatalf("POST /webhooks %s: %d %s", body, r.status, r.body)
		}
		return r.json(t)
	}
	def := create(`{"url":"https://example.com/default"}`)
	on := create(`{"url":"https://example.com/on","enabled":true}`)
	off := create(`{"url":"https://example.com/off","enabled":false}`)
	for _, c := range []struct {
		ep   map[string]any
		want bool
	}{{def, true}, {on, true}, {off, false}} {
		if c.ep["enabled"] != c.want || !strings.HasPrefix(c.ep["id"].(string), "whk_") {
			t.Errorf("created %v: want enabled %v and a whk_ id", c.ep, c.want)
		}
		if got := e.get(e.admin, e.path("/webhooks/%s", c.ep["id"])).json(t); got["enabled"] != c.want {
			t.Errorf("GET %s: enabled %v, want %v", c.ep["id"], got["enabled"], c.want)
		}
	}
	e.deliver(e.boot.Inbox.ID, rawMail("en@example.com", "Hi", "Hello."))
	for _, c := range []struct {
		ep   map[string]any
		want int
	}{{def, 1}, {on, 1}, {off, 0}} {
		r := e.get(e.admin, e.path("/webhooks/%s/deliveries", c.ep["id"]))
		if n := len(r.json(t)["data"].([]any)); r.status != http.StatusOK || n != c.want {
			t.Errorf("%s: %d deliveries, want %d", c.ep["url"], n, c.want)
		}
	}
}

// TestWebhookLegacyID: an endpoint stored with a whe_ id by an earlier
// version is still read, patched, rotated and deleted by that id.
func TestWebhookLegacyID(t *testing.T) {
	e := newEnv(t, Config{})
	other, err := sql.Open("sqlite", e.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	const id = "whe_01JDZQ3V4R5S6T7V8W9XYZABCD"
	if _, err := other.Exec(`INSERT INTO webhook_endpoints (id, project_id, url, event_types, inbox_ids, enabled, secret, created_at)
		VALUES (?, ?, 'https://example.com/old', '[]', NULL, 1, ?, ?)`, id, e.boot.ProjectID,
		"whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3", e.clock.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	ep := e.path("/webhooks/%s", id)
	if r := e.get(e.admin, ep); r.status != http.StatusOK || r.json(t)["id"] != id {
		t.Errorf("GET: %d %s", r.status, r.body)
	}
	if r := e.do(e.admin, "PATCH", ep, `{"description":"still here"}`); r.status != http.StatusOK || r.json(t)["description"] != "still here" {
		t.Errorf("PATCH: %d %s", r.status, r.body)
	}
	if r := e.do(e.admin, "POST", ep+"/rotate-secret", ""); r.status != http.StatusOK {
		t.Errorf("rotate: %d %s", r.status, r.body)
	}
	e.deliver(e.boot.Inbox.ID, rawMail("old@example.com", "Hi", "Hello."))
	if r := e.get(e.admin, ep+"/deliveries"); r.status != http.StatusOK || len(r.json(t)["data"].([]any)) != 1 {
		t.Errorf("deliveries: %d %s", r.status, r.body)
	}
	if r := e.do(e.admin, "DELETE", ep, ""); r.status != http.StatusOK {
		t.Errorf("DELETE: %d %s", r.status, r.body)
	}
	if r := e.get(e.admin, ep); r.status != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d", r.status)
	}
}

// TestBodyTrailingContent: a body is one JSON value; anything after it
// but whitespace is a 400, on every route that reads one, the send
// included (and a refused send stores nothing).
func TestBodyTrailingContent(t *testing.T) {
	e := newEnv(t, Config{})
	test, err := e.db.CreateInbox(context.Background(), e.boot.ProjectID, store.NewInbox{Address: "t@localhost", Environment: "test"})
	if err != nil {
		t.Fatal(err)
	}
	wh := e.do(e.admin, "POST", e.path("/webhooks"), `{"url":"https://example.com/x"}`).json(t)["id"]
	routes := []struct{ method, path, body string }{
		{"POST", e.path("/inboxes"), `{"address":"n%d@localhost"}`},
		{"PATCH", e.path("/inboxes/%s", e.boot.Inbox.ID), `{"display_name":"n%d"}`},
		{"POST", e.path("/keys"), `{"name":"n%d","scopes":["threads:read"]}`},
		{"POST", e.path("/webhooks"), `{"url":"https://example.com/n%d"}`},
		{"PATCH", e.path("/webhooks/%s", wh), `{"description":"n%d"}`},
		{"POST", e.path("/webhooks/%s/rotate-secret", wh), `{}`},
		{"POST", e.path("/inboxes/%s/messages", e.boot.Inbox.ID), `{"to":["a@example.com"],"text":"n%d"}`},
		{"POST", e.path("/test/inbound"), `{"inbox_id":"` + test.ID + `","from":"a@example.com","text":"n%d"}`},
	}
	n := 0
	for _, rt := range routes {
		for _, tail := range []string{"}", "]", "{}", ` "x"`, " x", "\n1", ",{}"} {
			n++
			body := strings.Replace(rt.body, "%d", fmt.Sprint(n), 1) + tail
			r := e.do(e.admin, rt.method, rt.path, body)
			if code, _ := errParam(t, r); r.status != http.StatusBadRequest || code != "invalid_request" {
				t.Errorf("%s %s %s: %d %s, want 400 invalid_request", rt.method, rt.path, body, r.status, r.body)
			}
		}
		n++
		body := strings.Replace(rt.body, "%d", fmt.Sprint(n), 1) + " \r\n\t "
		if r := e.do(e.admin, rt.method, rt.path, body); r.status/100 != 2 {
			t.Errorf("%s %s with trailing whitespace: %d %s", rt.method, rt.path, r.status, r.body)
		}
	}
	if got := e.outboundCount(e.boot.Inbox.ID); got != 1 {
		t.Errorf("%d messages sent, want the 1 without trailing content", got)
	}
}

// TestSendHeaderControls: header values may hold a tab but no other C0
// control or DEL; the refusal names the header.
func TestSendHeaderControls(t *testing.T) {
	e := newEnv(t, Config{})
	for _, c := range []string{"\\u0000", "\\u0001", "\\b", "\\f", "\\u000b", "\\u001b", "\\u001f", "\\u007f", "\\r", "\\n"} {
		body := `{"to":["a@example.com"],"text":"t","headers":{"X-Foo":"a` + c + `b"}}`
		r := e.sendReq(e.admin, e.boot.Inbox.ID, "", body)
		if code, param := errParam(t, r); r.status != 400 || code != "invalid_request" || param != "headers.X-Foo" {
			t.Errorf("%s: %d %s, want 400 with param headers.X-Foo", body, r.status, r.body)
		}
	}
	if n := e.outboundCount(e.boot.Inbox.ID); n != 0 {
		t.Fatalf("%d messages sent with control characters in a header", n)
	}
	r := e.sendReq(e.admin, e.boot.Inbox.ID, "", `{"to":["a@example.com"],"text":"t","headers":{"X-Foo":"a\tb"}}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("a tab in a header value: %d %s", r.status, r.body)
	}
	raw := e.get(e.admin, e.path("/inboxes/%s/messages/%s/raw", e.boot.Inbox.ID, r.json(t)["message_id"]))
	if !strings.Contains(string(raw.body), "X-Foo: a\tb\r\n") {
		t.Errorf("raw message lacks the tabbed header:\n%s", raw.body)
	}
}
