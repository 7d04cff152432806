package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/inboxd/inboxd/store"
)

const notFoundBody = `{"error":{"code":"not_found","message":"Resource not found."}}` + "\n"

// A key restricted to inbox A sees inbox B's inbox, thread, message, body,
// raw and attachment exactly as if they did not exist.
func TestRestrictedKeySeesOtherInboxAsNotFound(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	b, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "b@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	d := e.deliver(b.ID, rawMail("secret@example.com", "secret", withPDF, multipartHeader))
	atts, _ := e.db.Attachments(ctx, d.MessageID)
	if len(atts) != 1 {
		t.Fatalf("attachments: %v", atts)
	}
	onlyA := e.key(store.AllScopes(), []string{e.boot.Inbox.ID})
	for _, p := range []string{
		"/inboxes/" + b.ID,
		"/inboxes/" + b.ID + "/threads",
		"/inboxes/" + b.ID + "/threads/" + d.ThreadID,
		"/inboxes/" + b.ID + "/threads/" + d.ThreadID + "/messages",
		"/inboxes/" + b.ID + "/messages",
		"/inboxes/" + b.ID + "/messages/" + d.MessageID,
		"/inboxes/" + b.ID + "/messages/" + d.MessageID + "/body",
		"/inboxes/" + b.ID + "/messages/" + d.MessageID + "/raw",
		"/inboxes/" + b.ID + "/messages/" + d.MessageID + "/attachments/" + atts[0].ID,
		// B's thread and message through A's inbox path.
		"/inboxes/" + e.boot.Inbox.ID + "/threads/" + d.ThreadID,
		"/inboxes/" + e.boot.Inbox.ID + "/messages/" + d.MessageID,
		"/inboxes/" + e.boot.Inbox.ID + "/messages/" + d.MessageID + "/raw",
	} {
		r := e.get(onlyA, e.path("%s", p))
		if r.status != 404 || string(r.body) != notFoundBody {
			t.Errorf("GET %s: %d %s", p, r.status, r.body)
		}
	}
	if r := e.do(onlyA, "DELETE", e.path("/inboxes/%s/messages/%s", b.ID, d.MessageID), ""); r.status != 404 {
		t.Errorf("DELETE other inbox's message: %d", r.status)
	}
	// The list of inboxes shows only A; the admin still sees both.
	list := e.get(onlyA, e.path("/inboxes")).json(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != e.boot.Inbox.ID {
		t.Errorf("restricted inbox list: %v", list)
	}
	// Another project's path is not found either.
	if r := e.get(e.admin, "/v1/projects/prj_someone_else/inboxes"); r.status != 404 || string(r.body) != notFoundBody {
		t.Errorf("foreign project: %d %s", r.status, r.body)
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t, Config{})
	for _, tok := range []string{"", "nope", e.admin + "x"} {
		r := e.get(tok, e.path("/inboxes"))
		if r.status != 401 || r.json(t)["error"].(map[string]any)["code"] != "unauthenticated" {
			t.Errorf("token %q: %d %s", tok, r.status, r.body)
		}
	}
	k, tok, err := e.db.CreateKey(context.Background(), e.boot.ProjectID, "reader", []string{"inboxes:read"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := e.get(tok, e.path("/inboxes")); r.status != 200 {
		t.Fatalf("fresh key: %d", r.status)
	}
	// The scheme is case-insensitive; another scheme is no credential.
	for header, want := range map[string]int{"bearer " + tok: 200, "BEARER " + tok: 200, "Basic " + tok: 401, tok: 401} {
		req, _ := http.NewRequest("GET", e.srv.URL+e.path("/inboxes"), nil)
		req.Header.Set("Authorization", header)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Authorization %.12q…: %d, want %d", header, resp.StatusCode, want)
		}
	}
	me := e.get(tok, "/v1/me").json(t)
	if me["project_id"] != e.boot.ProjectID || me["inbox_ids"] != nil {
		t.Errorf("/v1/me: %v", me)
	}
	if r := e.do(e.admin, "DELETE", e.path("/keys/%s", k.ID), ""); r.status != 200 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if r := e.get(tok, e.path("/inboxes")); r.status != 401 {
		t.Errorf("revoked key: %d", r.status)
	}
}

func TestKeysAPI(t *testing.T) {
	e := newEnv(t, Config{})
	r := e.do(e.admin, "POST", e.path("/keys"), `{"name":"agent","scopes":["messages:read","threads:read"],"inbox_ids":["`+e.boot.Inbox.ID+`"]}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	k := r.json(t)
	tok, _ := k["token"].(string)
	if !strings.HasPrefix(tok, k["token_prefix"].(string)) || k["last_used_at"] != nil {
		t.Fatalf("created key: %v", k)
	}
	list := e.get(e.admin, e.path("/keys"))
	if strings.Contains(string(list.body), tok) || strings.Contains(string(list.body), `"token"`) {
		t.Errorf("key list shows a token: %s", list.body)
	}
	// A key cannot grant what it does not hold.
	limited := e.key([]string{"keys:write", "messages:read"}, nil)
	r = e.do(limited, "POST", e.path("/keys"), `{"name":"x","scopes":["messages:send"]}`)
	if r.status != 400 || r.json(t)["error"].(map[string]any)["param"] != "scopes" {
		t.Errorf("escalation: %d %s", r.status, r.body)
	}
	r = e.do(e.admin, "POST", e.path("/keys"), `{"name":"x","scopes":["root"]}`)
	if r.status != 400 {
		t.Errorf("unknown scope: %d %s", r.status, r.body)
	}
	// A key made without a name has a null one, as every empty value.
	r = e.do(e.admin, "POST", e.path("/keys"), `{"scopes":["messages:read"]}`)
	if name, ok := r.json(t)["name"]; r.status != 201 || !ok || name != nil {
		t.Errorf("a key without a name: %d %s", r.status, r.body)
	}
}

// A key's last_used_at is the time of its last use, kept to the minute.
func TestKeyLastUsed(t *testing.T) {
	e := newEnv(t, Config{})
	r := e.do(e.admin, "POST", e.path("/keys"), `{"name":"agent","scopes":["messages:read"]}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	k := r.json(t)
	token, id := k["token"].(string), k["id"].(string)
	lastUsed := func() any {
		t.Helper()
		for _, x := range e.get(e.admin, e.path("/keys")).json(t)["data"].([]any) {
			if x := x.(map[string]any); x["id"] == id {
				return x["last_used_at"]
			}
		}
		t.Fatalf("key %s not listed", id)
		return nil
	}
	if got := lastUsed(); got != nil {
		t.Fatalf("unused key: last_used_at %v", got)
	}
	use := func() {
		t.Helper()
		if r := e.get(token, e.path("/inboxes/%s/messages", e.boot.Inbox.ID)); r.status != 200 {
			t.Fatalf("use: %d %s", r.status, r.body)
		}
	}
	first := e.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	use()
	if got := lastUsed(); got != first {
		t.Fatalf("last_used_at after use = %v, want %s", got, first)
	}
	e.clock.Advance(30 * time.Second)
	use()
	if got := lastUsed(); got != first {
		t.Errorf("last_used_at 30 s later = %v, want %s (written once a minute)", got, first)
	}
	e.clock.Advance(31 * time.Second)
	later := e.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	use()
	if got := lastUsed(); got != later {
		t.Errorf("last_used_at a minute later = %v, want %s", got, later)
	}
}

func TestErrorsAreEnveloped(t *testing.T) {
	e := newEnv(t, Config{MaxBodyBytes: 64})
	cases := []struct {
		name, method, path, body string
		status                   int
		code, param              string
	}{
		{"router 404", "GET", "/v1/nothing-here", "", 404, "not_found", ""},
		{"method not taken", "PUT", e.path("/inboxes"), "", 400, "invalid_request", ""},
		{"malformed json", "POST", e.path("/inboxes"), `{"address":`, 400, "invalid_request", ""},
		{"wrong type", "POST", e.path("/inboxes"), `{"address":5}`, 400, "invalid_request", "address"},
		{"unknown field", "POST", e.path("/inboxes"), `{"address":"a@b.c","colour":1}`, 400, "invalid_request", "colour"},
		{"too large", "POST", e.path("/inboxes"), `{"address":"` + strings.Repeat("a", 100) + `@b.c"}`, 413, "payload_too_large", ""},
		{"bad address", "POST", e.path("/inboxes"), `{"address":"no-at-sign"}`, 400, "invalid_request", "address"},
		{"duplicate inbox", "POST", e.path("/inboxes"), `{"address":"inbox@localhost"}`, 409, "conflict", "address"},
		{"limit 0", "GET", e.path("/inboxes/%s/threads?limit=0", e.boot.Inbox.ID), "", 400, "invalid_request", "limit"},
		{"limit 101", "GET", e.path("/inboxes/%s/threads?limit=101", e.boot.Inbox.ID), "", 400, "invalid_request", "limit"},
		{"limit abc", "GET", e.path("/inboxes/%s/messages?limit=abc", e.boot.Inbox.ID), "", 400, "invalid_request", "limit"},
		{"limit +5", "GET", e.path("/inboxes/%s/messages?limit=%%2B5", e.boot.Inbox.ID), "", 400, "invalid_request", "limit"},
		{"limit twice", "GET", e.path("/inboxes/%s/threads?limit=5&limit=6", e.boot.Inbox.ID), "", 400, "invalid_request", "limit"},
		{"q twice", "GET", e.path("/inboxes/%s/threads?q=open&q=invoice", e.boot.Inbox.ID), "", 400, "invalid_request", "q"},
		{"direction twice", "GET", e.path("/inboxes/%s/messages?direction=inbound&direction=outbound", e.boot.Inbox.ID), "", 400, "invalid_request", "direction"},
		{"inbox_id twice", "GET", e.path("/events?type=message.received&inbox_id=%s&inbox_id=%[1]s", e.boot.Inbox.ID), "", 400, "invalid_request", "inbox_id"},
		{"a body that is not an object", "POST", e.path("/inboxes"), `[]`, 400, "invalid_request", ""},
		{"unbalanced q", "GET", e.path("/inboxes/%s/messages?q=%%22open", e.boot.Inbox.ID), "", 400, "invalid_request", "q"},
		{"q not utf-8", "GET", e.path("/inboxes/%s/threads?q=%%E6%%9D%%B1%%FF", e.boot.Inbox.ID), "", 400, "invalid_request", "q"},
		{"wait 61", "GET", e.path("/inboxes/%s/threads/thd_x/messages?wait=61", e.boot.Inbox.ID), "", 404, "not_found", ""},
		{"bad cursor", "GET", e.path("/inboxes/%s/threads?cursor=garbage", e.boot.Inbox.ID), "", 400, "invalid_cursor", "cursor"},
	}
	for _, c := range cases {
		r := e.do(e.admin, c.method, c.path, c.body)
		if r.status != c.status || r.header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%s: %d %q %s", c.name, r.status, r.header.Get("Content-Type"), r.body)
			continue
		}
		got := r.json(t)["error"].(map[string]any)
		if got["code"] != c.code || (c.param != "" && got["param"] != c.param) || got["message"] == "" {
			t.Errorf("%s: %s", c.name, r.body)
		}
	}
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, Config{Limiter: httprate.NewRateLimiter(3, time.Minute)})
	for i := range 3 {
		if r := e.get(e.admin, "/v1/me"); r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	r := e.get(e.admin, "/v1/me")
	if r.status != 429 || r.header.Get("Retry-After") == "" || r.json(t)["error"].(map[string]any)["code"] != "rate_limited" {
		t.Fatalf("over the limit: %d %v %s", r.status, r.header, r.body)
	}
	// Limits are per key.
	if r := e.get(e.key([]string{"inboxes:read"}, nil), "/v1/me"); r.status != 200 {
		t.Errorf("another key was limited: %d", r.status)
	}
}
