package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/webhook"
)

func fieldNames(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func errParam(t *testing.T, r response) (string, string) {
	t.Helper()
	var v struct {
		Error struct{ Code, Param string }
	}
	body := r.json(t)
	e, _ := body["error"].(map[string]any)
	v.Error.Code, _ = e["code"].(string)
	v.Error.Param, _ = e["param"].(string)
	return v.Error.Code, v.Error.Param
}

func TestWebhookEndpointsAPI(t *testing.T) {
	e := newEnv(t, Config{})
	objFields := []string{"created_at", "description", "disabled_reason", "enabled", "event_types", "id", "inbox_ids", "url"}

	r := e.do(e.admin, "POST", e.path("/webhooks"), `{"url":"https://example.com/hook","event_types":["message.received"],"description":"mine"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	created := r.json(t)
	if got := fieldNames(created); !slices.Equal(got, []string{"created_at", "description", "disabled_reason", "enabled", "event_types", "id", "inbox_ids", "secret", "url"}) {
		t.Errorf("create answer fields %v", got)
	}
	secret, _ := created["secret"].(string)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, webhook.SecretPrefix))
	if err := webhook.ValidateSecret(secret); err != nil || len(key) != 32 {
		t.Errorf("secret %q: %v", secret, err)
	}
	if created["inbox_ids"] != nil || created["enabled"] != true || created["disabled_reason"] != nil || created["description"] != "mine" {
		t.Errorf("created %v", created)
	}
	id := created["id"].(string)

	for _, path := range []string{"/webhooks/" + id, "/webhooks"} {
		r := e.get(e.admin, e.path("%s", path))
		if r.status != http.StatusOK || strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), `"secret"`) {
			t.Errorf("GET %s: %d %s (the secret must not appear)", path, r.status, r.body)
		}
	}
	got := e.get(e.admin, e.path("/webhooks/%s", id)).json(t)
	if !slices.Equal(fieldNames(got), objFields) {
		t.Errorf("endpoint fields %v, want %v", fieldNames(got), objFields)
	}

	r = e.do(e.admin, "PATCH", e.path("/webhooks/%s", id), fmt.Sprintf(`{"enabled":false,"event_types":[],"inbox_ids":[%q],"url":"http://example.org/x"}`, e.boot.Inbox.ID))
	upd := r.json(t)
	if r.status != http.StatusOK || upd["enabled"] != false || upd["url"] != "http://example.org/x" || len(upd["event_types"].([]any)) != 0 ||
		len(upd["inbox_ids"].([]any)) != 1 {
		t.Errorf("patch: %d %s", r.status, r.body)
	}
	r = e.do(e.admin, "PATCH", e.path("/webhooks/%s", id), `{"inbox_ids":null}`)
	if r.status != http.StatusOK || r.json(t)["inbox_ids"] != nil || r.json(t)["url"] != "http://example.org/x" {
		t.Errorf("patch inbox_ids null: %d %s", r.status, r.body)
	}
	// The object shows no description as null, and null is how it is cleared.
	r = e.do(e.admin, "PATCH", e.path("/webhooks/%s", id), `{"description":null}`)
	if r.status != http.StatusOK || r.json(t)["description"] != nil || r.json(t)["url"] != "http://example.org/x" {
		t.Errorf("patch description null: %d %s", r.status, r.body)
	}
	if r := e.do(e.admin, "PATCH", e.path("/webhooks/%s", id), `{"url":null}`); r.status != 400 {
		t.Errorf("patch url null: %d %s", r.status, r.body)
	}

	r = e.do(e.admin, "POST", e.path("/webhooks/%s/rotate-secret", id), "")
	rotated := r.json(t)
	if r.status != http.StatusOK || rotated["secret"] == secret || rotated["secret"] == nil {
		t.Errorf("rotate: %d %s", r.status, r.body)
	}
	supplied := "whsec_" + base64.StdEncoding.EncodeToString([]byte("exactly twenty-four byte"))
	r = e.do(e.admin, "POST", e.path("/webhooks/%s/rotate-secret", id), fmt.Sprintf(`{"secret":%q}`, supplied))
	if r.status != http.StatusOK || r.json(t)["secret"] != supplied {
		t.Errorf("rotate to a supplied secret: %d %s", r.status, r.body)
	}

	for _, c := range []struct{ body, param string }{
		{`{}`, "url"},
		{`{"url":"ftp://example.com/"}`, "url"},
		{`{"url":"/relative"}`, "url"},
		{`{"url":"http://127.0.0.1:99999/"}`, "url"},
		{`{"url":"https://example.com","event_types":["message.exploded"]}`, "event_types"},
		{`{"url":"https://example.com","inbox_ids":["ibx_nope"]}`, "inbox_ids"},
		{`{"url":"https://example.com","secret":"whsec_c2hvcnQ="}`, "secret"},
		{`{"url":"https://example.com","enabled":"no"}`, "enabled"},
		{`{"url":"https://example.com","color":"red"}`, "color"},
	} {
		r := e.do(e.admin, "POST", e.path("/webhooks"), c.body)
		if code, param := errParam(t, r); r.status != 400 || code != "invalid_request" || param != c.param {
			t.Errorf("POST %s: %d %s, want 400 param %s", c.body, r.status, r.body, c.param)
		}
	}
	if r := e.do(e.admin, "PATCH", e.path("/webhooks/%s", id), `{"secret":"`+supplied+`"}`); r.status != 400 {
		t.Errorf("PATCH secret: %d", r.status)
	}

	if r := e.do(e.admin, "DELETE", e.path("/webhooks/%s", id), ""); r.status != http.StatusOK {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	if r := e.get(e.admin, e.path("/webhooks/%s", id)); r.status != http.StatusNotFound {
		t.Errorf("get after delete: %d", r.status)
	}

	// Scopes: webhooks:read cannot write.
	reader := e.key([]string{"webhooks:read"}, nil)
	if r := e.do(reader, "POST", e.path("/webhooks"), `{"url":"https://example.com"}`); r.status != http.StatusForbidden {
		t.Errorf("create with webhooks:read: %d", r.status)
	}
}

func TestWebhookDenyPrivateAtRegistration(t *testing.T) {
	var checked []string
	e := newEnvWith(t, Config{}, app.Config{CheckWebhookURL: func(_ context.Context, u *url.URL) error {
		checked = append(checked, u.Host)
		if u.Hostname() == "127.0.0.1" {
			return errors.New("127.0.0.1 is a loopback address")
		}
		return nil
	}})
	r := e.do(e.admin, "POST", e.path("/webhooks"), `{"url":"http://127.0.0.1:9/hook"}`)
	if code, param := errParam(t, r); r.status != 400 || code != "invalid_request" || param != "url" || !strings.Contains(string(r.body), "loopback") {
		t.Errorf("private URL: %d %s", r.status, r.body)
	}
	r = e.do(e.admin, "POST", e.path("/webhooks"), `{"url":"https://example.com/hook"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("public URL: %d %s", r.status, r.body)
	}
	r = e.do(e.admin, "PATCH", e.path("/webhooks/%s", r.json(t)["id"]), `{"url":"http://127.0.0.1:9/hook"}`)
	if r.status != 400 {
		t.Errorf("PATCH to a private URL: %d %s", r.status, r.body)
	}
	if !slices.Equal(checked, []string{"127.0.0.1:9", "example.com", "127.0.0.1:9"}) {
		t.Errorf("checked %v", checked)
	}
}

// TestWebhookInboxGrant: a key restricted to some inboxes registers
// endpoints only for them and sees no others.
func TestWebhookInboxGrant(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	other, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	restricted := e.key([]string{"webhooks:read", "webhooks:write"}, []string{e.boot.Inbox.ID})

	r := e.do(restricted, "POST", e.path("/webhooks"), `{"url":"https://example.com/a"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	mine := r.json(t)
	if ids, _ := mine["inbox_ids"].([]any); len(ids) != 1 || ids[0] != e.boot.Inbox.ID {
		t.Errorf("inbox_ids left out: %v, want the key's grant", mine["inbox_ids"])
	}
	for _, body := range []string{
		fmt.Sprintf(`{"url":"https://example.com/b","inbox_ids":[%q]}`, other.ID),
		`{"url":"https://example.com/b","inbox_ids":null}`,
	} {
		if r := e.do(restricted, "POST", e.path("/webhooks"), body); r.status != 400 {
			t.Errorf("restricted create %s: %d %s", body, r.status, r.body)
		}
	}
	if r := e.do(restricted, "PATCH", e.path("/webhooks/%s", mine["id"]), `{"inbox_ids":null}`); r.status != 400 {
		t.Errorf("restricted PATCH inbox_ids null: %d", r.status)
	}
	all := e.do(e.admin, "POST", e.path("/webhooks"), `{"url":"https://example.com/all"}`).json(t)
	if r := e.get(restricted, e.path("/webhooks/%s", all["id"])); r.status != http.StatusNotFound {
		t.Errorf("restricted key reads an all-inbox endpoint: %d", r.status)
	}
	list := e.get(restricted, e.path("/webhooks")).json(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != mine["id"] {
		t.Errorf("restricted list: %v", list)
	}
	if n := len(e.get(e.admin, e.path("/webhooks")).json(t)["data"].([]any)); n != 2 {
		t.Errorf("admin list: %d endpoints", n)
	}
}

func TestWebhookDeliveriesAPI(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	ep := e.do(e.admin, "POST", e.path("/webhooks"), `{"url":"https://example.com/hook"}`).json(t)
	id := ep["id"].(string)
	for i := range 3 {
		e.deliver(e.boot.Inbox.ID, rawMail(fmt.Sprintf("d%d@example.com", i), "Hi", "Hello."))
	}
	deliveryFields := []string{"attempt_count", "created_at", "endpoint_id", "event_id", "event_type", "id", "next_attempt_at", "status"}

	// Pages of two, newest first.
	var ids []string
	path := e.path("/webhooks/%s/deliveries?limit=2", id)
	for path != "" {
		r := e.get(e.admin, path)
		if r.status != http.StatusOK {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		page := r.json(t)
		for _, d := range page["data"].([]any) {
			d := d.(map[string]any)
			if !slices.Equal(fieldNames(d), deliveryFields) || d["status"] != "pending" || d["event_type"] != "message.received" || d["endpoint_id"] != id {
				t.Errorf("delivery %v", d)
			}
			ids = append(ids, d["id"].(string))
		}
		path = ""
		if c, ok := page["next_cursor"].(string); ok {
			path = e.path("/webhooks/%s/deliveries?limit=2&cursor=%s", id, url.QueryEscape(c))
		}
	}
	if len(ids) != 3 || !slices.IsSortedFunc(ids, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Errorf("deliveries %v, want 3 newest first", ids)
	}
	other := e.do(e.admin, "POST", e.path("/webhooks"), `{"url":"https://example.com/other"}`).json(t)
	if r := e.get(e.admin, e.path("/webhooks/%s/deliveries?limit=2", id)); r.status == 200 {
		c := r.json(t)["next_cursor"].(string)
		if r := e.get(e.admin, e.path("/webhooks/%s/deliveries?cursor=%s", other["id"], url.QueryEscape(c))); r.status != 400 {
			t.Errorf("a cursor of another endpoint: %d", r.status)
		}
	}

	// One attempt, answered 500: the single route lists it.
	cs, err := e.db.ClaimWebhookDeliveries(ctx, 10, 4, nil, time.Minute)
	if err != nil || len(cs) != 3 {
		t.Fatalf("claim: %d %v", len(cs), err)
	}
	now := e.clock.Now()
	for _, c := range cs {
		o := store.WebhookDeliveryResult{EndpointID: c.EndpointID, DeliveryID: c.DeliveryID, Status: store.WebhookPending, NextAttempt: now.Add(5 * time.Second),
			Attempt: store.WebhookAttempt{At: now, StatusCode: 500, Duration: 42 * time.Millisecond, ResponseExcerpt: "oops"}}
		if c.DeliveryID == ids[0] {
			o = store.WebhookDeliveryResult{EndpointID: c.EndpointID, DeliveryID: c.DeliveryID, Status: store.WebhookDelivered,
				Attempt: store.WebhookAttempt{At: now, StatusCode: 200, Duration: time.Millisecond}}
		}
		if err := e.db.RecordWebhookDeliveries(ctx, []store.WebhookDeliveryResult{o}); err != nil {
			t.Fatal(err)
		}
	}
	r := e.get(e.admin, e.path("/webhooks/%s/deliveries/%s", id, ids[1]))
	d := r.json(t)
	if r.status != http.StatusOK || !slices.Equal(fieldNames(d), append([]string{"attempt_count", "attempts"}, deliveryFields[1:]...)) {
		t.Fatalf("get delivery: %d %s", r.status, r.body)
	}
	atts := d["attempts"].([]any)
	if len(atts) != 1 {
		t.Fatalf("attempts %v", atts)
	}
	a := atts[0].(map[string]any)
	if a["status_code"] != 500.0 || a["duration_ms"] != 42.0 || a["response_excerpt"] != "oops" || a["error"] != nil || a["at"] != timeJSON(now) ||
		d["attempt_count"] != 1.0 || d["next_attempt_at"] != timeJSON(now.Add(5*time.Second)) {
		t.Errorf("delivery %s", r.body)
	}

	// Retry: pending → due now, 202; delivered → 409.
	e.clock.Advance(time.Second)
	r = e.do(e.admin, "POST", e.path("/webhooks/%s/deliveries/%s/retry", id, ids[1]), "")
	if rd := r.json(t); r.status != http.StatusAccepted || rd["status"] != "pending" || rd["next_attempt_at"] != timeJSON(e.clock.Now()) {
		t.Errorf("retry: %d %s", r.status, r.body)
	}
	r = e.do(e.admin, "POST", e.path("/webhooks/%s/deliveries/%s/retry", id, ids[0]), "")
	if code, _ := errParam(t, r); r.status != http.StatusConflict || code != "conflict" {
		t.Errorf("retry of a delivered one: %d %s", r.status, r.body)
	}
	if r := e.get(e.admin, e.path("/webhooks/%s/deliveries/%s", other["id"], ids[1])); r.status != http.StatusNotFound {
		t.Errorf("a delivery under another endpoint: %d", r.status)
	}
}
