package api

import (
	"database/sql"
	"net/http"
	"strings"
	"testing"
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
