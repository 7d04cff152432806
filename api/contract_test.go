package api

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/webhook"
)

// execAside runs SQL on the database file through a connection of its
// own, as another program (an earlier version, sqlite3) would.
func (e *env) execAside(query string, args ...any) {
	e.t.Helper()
	// The server's writer (a search indexing pass, say) may hold the
	// lock for a moment: wait for it rather than fail.
	db, err := sql.Open("sqlite", e.dbPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		e.t.Fatal(err)
	}
}

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
	const id = "whe_01JDZQ3V4R5S6T7V8W9XYZABCD"
	e.execAside(`INSERT INTO webhook_endpoints (id, project_id, url, event_types, inbox_ids, enabled, secret, created_at)
		VALUES (?, ?, 'https://example.com/old', '[]', NULL, 1, ?, ?)`, id, e.boot.ProjectID,
		"whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3", e.clock.Now().UnixMilli())
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
	// The longest name allowed is sent (one of 74 made go-message panic).
	long := "X-" + strings.Repeat("n", 62)
	if r := e.sendReq(e.admin, e.boot.Inbox.ID, "", `{"to":["a@example.com"],"text":"t","headers":{"`+long+`":"a value"}}`); r.status != http.StatusAccepted {
		t.Fatalf("a header name of 64: %d %s", r.status, r.body)
	}
	r := e.sendReq(e.admin, e.boot.Inbox.ID, "", `{"to":["a@example.com"],"text":"t","headers":{"X-Foo":"a\tb"}}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("a tab in a header value: %d %s", r.status, r.body)
	}
	raw := e.get(e.admin, e.path("/inboxes/%s/messages/%s/raw", e.boot.Inbox.ID, r.json(t)["message_id"]))
	if !strings.Contains(string(raw.body), "X-Foo: a\tb\r\n") {
		t.Errorf("raw message lacks the tabbed header:\n%s", raw.body)
	}
	// A value beyond ASCII goes out as RFC 2047 words, not raw 8-bit:
	// the whole of an X-* value, each phrase of Keywords. The headers
	// come in sorted order.
	r = e.sendReq(e.admin, e.boot.Inbox.ID, "", `{"to":["a@example.com"],"text":"t","headers":{"X-Uni":"héllo wörld","Keywords":"café, plain","X-A":"a"}}`)
	if r.status != http.StatusAccepted {
		t.Fatalf("a header beyond ASCII: %d %s", r.status, r.body)
	}
	raw = e.get(e.admin, e.path("/inboxes/%s/messages/%s/raw", e.boot.Inbox.ID, r.json(t)["message_id"]))
	if !strings.Contains(string(raw.body), "Keywords: =?utf-8?b?Y2Fmw6k=?=, plain\r\nX-A: a\r\nX-Uni: =?utf-8?q?h=C3=A9llo_w=C3=B6rld?=\r\n") {
		t.Errorf("raw message lacks the encoded headers, in order:\n%s", raw.body)
	}
}

// pageAll reads a project list with ?limit=n, following next_cursor to
// the end; every page but the last is full with has_more, the last has
// next_cursor null.
func pageAll(t *testing.T, e *env, token, path string, n int) []string {
	t.Helper()
	var all []string
	url := fmt.Sprintf("%s?limit=%d", path, n)
	for range 1000 {
		r := e.get(token, url)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", url, r.status, r.body)
		}
		v := r.json(t)
		data := v["data"].([]any)
		for _, d := range data {
			all = append(all, d.(map[string]any)["id"].(string))
		}
		if v["has_more"] != true {
			if v["next_cursor"] != nil {
				t.Errorf("%s: next_cursor %v on the last page", url, v["next_cursor"])
			}
			return all
		}
		if len(data) != n {
			t.Errorf("%s: %d rows on a page with has_more, want %d", url, len(data), n)
		}
		url = fmt.Sprintf("%s?limit=%d&cursor=%s", path, n, v["next_cursor"])
	}
	t.Fatalf("%s: no last page", path)
	return nil
}

// TestProjectListsPage: /inboxes, /keys and /webhooks validate limit and
// page with signed cursors like every other list (SPEC §5.2), for an
// unrestricted key and for one whose grant hides rows in between.
func TestProjectListsPage(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	mine := []string{e.boot.Inbox.ID}
	for i := range 6 {
		ib, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: fmt.Sprintf("p%d@localhost", i)})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			mine = append(mine, ib.ID)
		}
		var inboxes []string
		if i%2 == 1 {
			inboxes = []string{ib.ID}
		}
		if _, _, err := e.db.CreateKey(ctx, e.boot.ProjectID, "k", []string{"inboxes:read"}, inboxes); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.db.CreateWebhookEndpoint(ctx, e.boot.ProjectID, store.NewWebhookEndpoint{URL: "https://example.com/", InboxIDs: inboxes, Secret: webhook.NewSecret()}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Millisecond)
	}
	restricted := e.key([]string{"inboxes:read", "keys:write", "webhooks:read"}, mine)
	ids := func(list any) []string {
		var out []string
		switch l := list.(type) {
		case []store.Inbox:
			for _, x := range l {
				out = append(out, x.ID)
			}
		case []store.Key:
			for _, x := range l {
				out = append(out, x.ID)
			}
		case []store.WebhookEndpoint:
			for _, x := range l {
				out = append(out, x.ID)
			}
		}
		return out
	}
	inboxes, _ := e.db.ListInboxes(ctx, e.boot.ProjectID)
	keys, _ := e.db.ListKeys(ctx, e.boot.ProjectID)
	eps, _ := e.db.WebhookEndpoints(ctx, e.boot.ProjectID)
	var keysR, epsR []string
	for _, x := range keys {
		if x.InboxIDs != nil { // the odd inboxes' keys and the restricted key itself
			keysR = append(keysR, x.ID)
		}
	}
	for _, x := range eps {
		if x.InboxIDs != nil {
			epsR = append(epsR, x.ID)
		}
	}
	for _, c := range []struct {
		list         string
		all, granted []string
	}{
		{"/inboxes", ids(inboxes), mine},
		{"/keys", ids(keys), keysR},
		{"/webhooks", ids(eps), epsR},
	} {
		for _, bad := range []string{"0", "101", "abc", "-1", "1.5", ""} {
			r := e.get(e.admin, e.path("%s?limit=%s", c.list, bad))
			if bad == "" {
				if r.status != http.StatusOK {
					t.Errorf("%s?limit=: %d", c.list, r.status)
				}
				continue
			}
			if code, param := errParam(t, r); r.status != 400 || code != "invalid_request" || param != "limit" {
				t.Errorf("%s?limit=%s: %d %s, want 400 invalid_request naming limit", c.list, bad, r.status, r.body)
			}
		}
		for _, n := range []int{1, 2, 100} {
			if got := pageAll(t, e, e.admin, e.path("%s", c.list), n); !slices.Equal(got, c.all) {
				t.Errorf("%s, limit %d: %v, want %v", c.list, n, got, c.all)
			}
			if got := pageAll(t, e, restricted, e.path("%s", c.list), n); !slices.Equal(got, c.granted) || len(c.granted) < 3 {
				t.Errorf("%s for the restricted key, limit %d: %v, want %v", c.list, n, got, c.granted)
			}
		}
		// A cursor belongs to its list.
		next, ok := e.get(e.admin, e.path("%s?limit=1", c.list)).json(t)["next_cursor"].(string)
		if !ok {
			t.Fatalf("%s?limit=1: no next_cursor", c.list)
		}
		for _, other := range []string{"/inboxes", "/keys", "/webhooks"} {
			if other == c.list {
				continue
			}
			if code, _ := errParam(t, e.get(e.admin, e.path("%s?cursor=%s", other, next))); code != "invalid_cursor" {
				t.Errorf("a %s cursor on %s: %s, want invalid_cursor", c.list, other, code)
			}
		}
	}
	// The default page is 25 (SPEC §5.2 names none for these lists).
	for i := range 25 {
		if _, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: fmt.Sprintf("d%d@localhost", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if v := e.get(e.admin, e.path("/inboxes")).json(t); len(v["data"].([]any)) != 25 || v["has_more"] != true {
		t.Errorf("default page: %d inboxes, has_more %v", len(v["data"].([]any)), v["has_more"])
	}
}

// TestKeysWithinGrant: a key with keys:write creates, lists and revokes
// only keys within its own grant; any other is not found (SPEC §5.1).
func TestKeysWithinGrant(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	a := e.boot.Inbox.ID
	b, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "b@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(scopes, inboxes []string) string {
		t.Helper()
		k, _, err := e.db.CreateKey(ctx, e.boot.ProjectID, "k", scopes, inboxes)
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Millisecond)
		return k.ID
	}
	me, err := e.db.KeyByToken(ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	inside := mk([]string{"threads:read"}, []string{a})
	noInbox := mk([]string{"threads:read"}, []string{})
	allInboxes := mk([]string{"threads:read"}, nil)
	moreScopes := mk([]string{"threads:read", "messages:read"}, []string{a})
	moreInboxes := mk([]string{"threads:read"}, []string{a, b.ID})
	restricted := e.key([]string{"keys:write", "threads:read"}, []string{a})
	self, err := e.db.KeyByToken(ctx, restricted)
	if err != nil {
		t.Fatal(err)
	}

	if got, want := pageAll(t, e, restricted, e.path("/keys"), 1), []string{inside, noInbox, self.ID}; !slices.Equal(got, want) {
		t.Errorf("restricted key lists %v, want %v", got, want)
	}
	missing := e.do(restricted, "DELETE", e.path("/keys/key_nope"), "")
	if missing.status != http.StatusNotFound || string(missing.body) != notFoundBody {
		t.Fatalf("revoking a missing key: %d %s", missing.status, missing.body)
	}
	for _, id := range []string{me.ID, allInboxes, moreScopes, moreInboxes} {
		if r := e.do(restricted, "DELETE", e.path("/keys/%s", id), ""); r.status != missing.status || string(r.body) != string(missing.body) {
			t.Errorf("revoking %s outside the grant: %d %s, want exactly the missing key's answer", id, r.status, r.body)
		}
	}
	if r := e.get(e.admin, "/v1/me"); r.status != http.StatusOK {
		t.Fatalf("the admin key stopped working: %d", r.status)
	}
	if r := e.do(restricted, "DELETE", e.path("/keys/%s", inside), ""); r.status != http.StatusOK {
		t.Errorf("revoking a key within the grant: %d %s", r.status, r.body)
	}

	// Create: a grant wider than the caller's is a 400 naming the field.
	for _, c := range []struct{ body, param string }{
		{`{"name":"x","scopes":["messages:read"]}`, "scopes"},
		{fmt.Sprintf(`{"name":"x","scopes":["threads:read"],"inbox_ids":[%q]}`, b.ID), "inbox_ids"},
		{`{"name":"x","scopes":["threads:read"],"inbox_ids":null}`, "inbox_ids"},
	} {
		r := e.do(restricted, "POST", e.path("/keys"), c.body)
		if code, param := errParam(t, r); r.status != 400 || code != "invalid_request" || param != c.param {
			t.Errorf("create %s: %d %s, want 400 naming %s", c.body, r.status, r.body, c.param)
		}
	}
	r := e.do(restricted, "POST", e.path("/keys"), `{"name":"x","scopes":["threads:read"]}`)
	if got, _ := r.json(t)["inbox_ids"].([]any); r.status != http.StatusCreated || len(got) != 1 || got[0] != a {
		t.Errorf("create inheriting the grant: %d %s", r.status, r.body)
	}

	// An unrestricted key with fewer scopes: inboxes do not limit it,
	// scopes do.
	narrow := e.key([]string{"keys:write", "threads:read"}, nil)
	got := pageAll(t, e, narrow, e.path("/keys"), 100)
	if slices.Contains(got, me.ID) || slices.Contains(got, moreScopes) || !slices.Contains(got, allInboxes) || !slices.Contains(got, self.ID) {
		t.Errorf("unrestricted narrow key lists %v", got)
	}
}

// TestEmptySubjectAndPreviewAreNull: a message without a subject or a
// body shows them as null, never "" (SPEC §5.1: empty values are null),
// on the message, its rows in the message and thread lists and a held
// draft (and its attachment's id); a real subject stays
// a string.
func TestEmptySubjectAndPreviewAreNull(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, "From: a@example.com\r\nTo: inbox@localhost\r\nMessage-ID: <bare@example.com>\r\n\r\n")
	named := e.deliver(ib, "From: a@example.com\r\nTo: inbox@localhost\r\nSubject: Hi\r\nMessage-ID: <named@example.com>\r\n\r\nHello\r\n")

	isNull := func(what string, o map[string]any, fields ...string) {
		t.Helper()
		for _, f := range fields {
			if v, ok := o[f]; !ok || v != nil {
				t.Errorf("%s %s = %#v (present %v), want null", what, f, v, ok)
			}
		}
	}
	isNull("message", e.get(e.admin, e.path("/inboxes/%s/messages/%s", ib, d.MessageID)).json(t), "subject", "preview")
	if m := e.get(e.admin, e.path("/inboxes/%s/messages/%s", ib, named.MessageID)).json(t); m["subject"] != "Hi" || m["preview"] != "Hello" {
		t.Errorf("named message: subject %#v preview %#v", m["subject"], m["preview"])
	}
	// find is the row of a list whose id is id.
	find := func(what, path, id string) map[string]any {
		t.Helper()
		for _, row := range e.get(e.admin, path).json(t)["data"].([]any) {
			if row := row.(map[string]any); row["id"] == id {
				return row
			}
		}
		t.Fatalf("%s: no row %s", what, id)
		return nil
	}
	isNull("thread row", find("threads", e.path("/inboxes/%s/threads", ib), d.ThreadID), "subject", "preview")
	isNull("message row", find("messages", e.path("/inboxes/%s/messages", ib), d.MessageID), "subject", "preview")
	isNull("thread message", e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages", ib, d.ThreadID)).json(t)["data"].([]any)[0].(map[string]any), "subject", "preview")

	if r := e.do(e.admin, "PATCH", e.path("/inboxes/%s", ib), `{"send_policy":"approve_all"}`); r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	held := e.sendReq(e.admin, ib, "", `{"to":["x@example.net"],"text":"no subject","attachments":[{"filename":"a.txt","content_base64":"aGk="}]}`).json(t)
	a := e.get(e.admin, e.path("/inboxes/%s/approvals/%s", ib, held["approval_id"])).json(t)
	isNull("draft", a["draft"].(map[string]any), "subject")
	// A draft's attachment is not stored yet: it has no id.
	isNull("draft attachment", a["draft"].(map[string]any)["attachments"].([]any)[0].(map[string]any), "id")
}

// TestMetricsNeedAKey: beside the API, /metrics answers a valid key only
// (SPEC §5 names the routes that need none, and /metrics is not one);
// --metrics-addr serves it keyless on a listener of its own.
func TestMetricsNeedAKey(t *testing.T) {
	e := newEnv(t, Config{})
	for _, token := range []string{"", "inboxd_not_a_key"} {
		if r := e.get(token, "/metrics"); r.status != 401 || !strings.Contains(string(r.body), `"unauthenticated"`) {
			t.Errorf("/metrics with key %q: %d %.200s", token, r.status, r.body)
		}
	}
	reader := e.key([]string{"messages:read"}, []string{e.boot.Inbox.ID})
	if r := e.get(reader, "/metrics"); r.status != 200 || !strings.Contains(r.header.Get("Content-Type"), "text/plain") {
		t.Errorf("/metrics with a key: %d %s %.200s", r.status, r.header.Get("Content-Type"), r.body)
	}
}
