package app

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/webhook"
)

// endpoint registers a webhook endpoint in the bootstrapped project for
// inboxes (nil: every inbox), a millisecond after the one before it.
func (e *env) endpoint(inboxes []string) store.WebhookEndpoint {
	e.t.Helper()
	e.clock.Advance(time.Millisecond)
	ep, _, err := e.db.CreateWebhookEndpoint(e.ctx, e.boot.ProjectID, store.NewWebhookEndpoint{URL: "https://example.com/hook",
		InboxIDs: inboxes, Secret: webhook.NewSecret()})
	if err != nil {
		e.t.Fatal(err)
	}
	return ep
}

// supplied is a secret of the format a client may supply.
var supplied = webhook.SecretPrefix + base64.StdEncoding.EncodeToString([]byte("exactly twenty-four byte"))

func TestWebhookOperationsNeedTheirScope(t *testing.T) {
	e := newEnv(t)
	ep := e.endpoint(nil)
	read, write := e.caller(nil, "webhooks:read"), e.caller(nil, "webhooks:write")
	for _, c := range []struct {
		name, scope string
		op          func() error
	}{
		{"list", "webhooks:read", func() error { _, err := e.app.ListWebhooks(e.ctx, write, PageParams{Limit: "x"}); return err }},
		{"get", "webhooks:read", func() error { _, err := e.app.Webhook(e.ctx, write, "whk_missing"); return err }},
		{"create", "webhooks:write", func() error { _, _, err := e.app.CreateWebhook(e.ctx, read, untouched(t)); return err }},
		{"update", "webhooks:write", func() error { _, err := e.app.UpdateWebhook(e.ctx, read, ep.ID, untouched(t)); return err }},
		{"delete", "webhooks:write", func() error { _, err := e.app.DeleteWebhook(e.ctx, read, ep.ID); return err }},
		{"rotate", "webhooks:write", func() error {
			_, _, err := e.app.RotateWebhookSecret(e.ctx, read, ep.ID, untouched(t))
			return err
		}},
	} {
		err := c.op()
		wantError(t, err, EPermissionDenied, "")
		if m := ErrorMessage(err); m != "This API key lacks the scope "+c.scope+"." {
			t.Errorf("%s: %q", c.name, m)
		}
	}
	if _, err := e.db.GetWebhookEndpoint(e.ctx, e.boot.ProjectID, ep.ID); err != nil {
		t.Errorf("the endpoint is gone after a refused delete: %v", err)
	}
}

func TestCreateWebhookValidation(t *testing.T) {
	e := newEnv(t)
	mine, other := e.boot.Inbox.ID, e.inbox("other@example.com").ID
	admin := e.caller(nil, "webhooks:write")
	restricted := e.caller([]string{mine}, "webhooks:write")
	for _, c := range []struct {
		caller               Caller
		body, param, message string
	}{
		{admin, `{}`, "url", "url is required."},
		{admin, `{"event_types":["nope"]}`, "url", "url is required."},
		{admin, `{"url":"ftp://example.com/"}`, "url", "url must be an absolute http or https URL without credentials."},
		{admin, `{"url":"/relative"}`, "url", "url must be an absolute http or https URL without credentials."},
		{admin, `{"url":"https://"}`, "url", "url must be an absolute http or https URL without credentials."},
		{admin, `{"url":"https://user:pw@example.com/"}`, "url", "url must be an absolute http or https URL without credentials."},
		{admin, `{"url":"http://127.0.0.1:99999/"}`, "url", "url must be an absolute http or https URL without credentials."},
		{admin, `{"url":"http://127.0.0.1:0/"}`, "url", "url must be an absolute http or https URL without credentials."},
		{admin, `{"url":"http://:8080/"}`, "url", "url must be an absolute http or https URL without credentials."},
		{admin, `{"url":null}`, "url", "url must not be null."},
		{admin, `{"url":"https://example.com","enabled":null}`, "enabled", "enabled must not be null."},
		{admin, `{"url":"https://example.com","event_types":null}`, "event_types", "event_types must not be null."},
		{admin, `{"url":"https://example.com","event_types":["message.received","message.exploded"]}`, "event_types", `Unknown event type "message.exploded".`},
		{admin, `{"url":"https://example.com","inbox_ids":["ibx_missing"]}`, "inbox_ids", "inbox_ids names an inbox that does not exist."},
		{admin, `{"url":"https://example.com","secret":"whsec_c2hvcnQ="}`, "secret", "secret must be whsec_ followed by the base64 of 24 to 64 bytes."},
		{admin, `{"url":"https://example.com","secret":"plain"}`, "secret", "secret must be whsec_ followed by the base64 of 24 to 64 bytes."},
		{restricted, `{"url":"https://example.com","inbox_ids":["` + other + `"]}`, "inbox_ids", `Unknown inbox "` + other + `".`},
		{restricted, `{"url":"https://example.com","inbox_ids":null}`, "inbox_ids", "This key is restricted to some inboxes: inbox_ids must list them."},
	} {
		_, _, err := e.app.CreateWebhook(e.ctx, c.caller, input(c.body))
		wantError(t, err, EInvalidRequest, c.param)
		if m := ErrorMessage(err); m != c.message {
			t.Errorf("%s: message %q, want %q", c.body, m, c.message)
		}
	}
	if eps, err := e.db.WebhookEndpoints(e.ctx, e.boot.ProjectID); err != nil || len(eps) != 0 {
		t.Fatalf("refused creates registered %d endpoints: %v", len(eps), err)
	}

	ep, secret, err := e.app.CreateWebhook(e.ctx, admin, input(`{"url":"http://example.com/a","event_types":["message.received"],"description":"mine","enabled":false}`))
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, webhook.SecretPrefix))
	if err != nil || ep.URL != "http://example.com/a" || !slices.Equal(ep.EventTypes, []string{"message.received"}) || ep.Description != "mine" ||
		ep.Enabled || ep.InboxIDs != nil || webhook.ValidateSecret(secret) != nil || len(key) != 32 {
		t.Errorf("create: %+v, secret %q, %v", ep, secret, err)
	}
	if _, again, _ := e.app.CreateWebhook(e.ctx, admin, input(`{"url":"https://example.com/b"}`)); again == secret {
		t.Error("two endpoints were given the same secret")
	}
	ep, secret, err = e.app.CreateWebhook(e.ctx, restricted, input(`{"url":"https://example.com/c","secret":"`+supplied+`"}`))
	if err != nil || secret != supplied || !slices.Equal(ep.InboxIDs, []string{mine}) || !ep.Enabled {
		t.Errorf("create, restricted, secret supplied: %+v, %q, %v; want the caller's inboxes and the secret given", ep, secret, err)
	}
}

// The URL check of --webhook-deny-private runs on every URL given, on
// create and update, after the URL's form and before anything else.
func TestWebhookURLCheck(t *testing.T) {
	e := newEnv(t)
	var checked []string
	a, err := New(e.ctx, e.db, Config{Now: e.clock.Now, CheckWebhookURL: func(_ context.Context, u *url.URL) error {
		checked = append(checked, u.Host)
		if u.Hostname() == "127.0.0.1" {
			return errors.New("127.0.0.1 is a loopback address")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := e.caller(nil, "webhooks:write")
	const refused = "url is refused (--webhook-deny-private): 127.0.0.1 is a loopback address."
	_, _, err = a.CreateWebhook(e.ctx, c, input(`{"url":"http://127.0.0.1:9/hook","event_types":["nope"]}`))
	if wantError(t, err, EInvalidRequest, "url"); ErrorMessage(err) != refused {
		t.Errorf("create: %q", ErrorMessage(err))
	}
	ep, _, err := a.CreateWebhook(e.ctx, c, input(`{"url":"https://example.com/hook"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.UpdateWebhook(e.ctx, c, ep.ID, input(`{"url":"http://127.0.0.1:9/hook"}`))
	if wantError(t, err, EInvalidRequest, "url"); ErrorMessage(err) != refused {
		t.Errorf("update: %q", ErrorMessage(err))
	}
	if _, err := a.UpdateWebhook(e.ctx, c, ep.ID, input(`{"description":"no url"}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.CreateWebhook(e.ctx, c, input(`{"url":"ftp://127.0.0.1/"}`)); ErrorParam(err) != "url" {
		t.Fatalf("create ftp: %v", err)
	}
	if want := []string{"127.0.0.1:9", "example.com", "127.0.0.1:9"}; !slices.Equal(checked, want) {
		t.Errorf("checked %v, want %v", checked, want)
	}
	if got, err := e.db.GetWebhookEndpoint(e.ctx, e.boot.ProjectID, ep.ID); err != nil || got.URL != "https://example.com/hook" {
		t.Errorf("after a refused update: %+v, %v", got, err)
	}
	// Without a check, any http(s) URL is accepted.
	if _, _, err := e.app.CreateWebhook(e.ctx, c, input(`{"url":"http://127.0.0.1:9/hook"}`)); err != nil {
		t.Errorf("no check: %v", err)
	}
}

// A restricted caller sees only the endpoints limited to inboxes of its
// grant: any other answers exactly like one that does not exist, before
// the input is read, and is left as it was; lists stay full around them.
func TestWebhookOutsideTheGrantIsNotFound(t *testing.T) {
	e := newEnv(t)
	mine, other := e.boot.Inbox.ID, e.inbox("other@example.com").ID
	all, theirs, both := e.endpoint(nil), e.endpoint([]string{other}), e.endpoint([]string{mine, other})
	own1, own2 := e.endpoint([]string{mine}), e.endpoint([]string{})
	e.endpoint(nil)
	own3 := e.endpoint([]string{mine})
	c := e.caller([]string{mine}, "webhooks:read", "webhooks:write")
	for _, id := range []string{all.ID, theirs.ID, both.ID, "whk_missing"} {
		notFound := func(op string, err error) {
			t.Helper()
			if ErrorCode(err) != ENotFound || ErrorMessage(err) != "Resource not found." {
				t.Errorf("%s %s: %v", op, id, err)
			}
		}
		_, err := e.app.Webhook(e.ctx, c, id)
		notFound("get", err)
		_, err = e.app.UpdateWebhook(e.ctx, c, id, untouched(t))
		notFound("update", err)
		_, _, err = e.app.RotateWebhookSecret(e.ctx, c, id, untouched(t))
		notFound("rotate", err)
		_, err = e.app.DeleteWebhook(e.ctx, c, id)
		notFound("delete", err)
	}
	if eps, err := e.db.WebhookEndpoints(e.ctx, e.boot.ProjectID); err != nil || len(eps) != 7 {
		t.Errorf("endpoints outside the grant were deleted: %d left, %v", len(eps), err)
	}
	p := PageParams{Limit: "1"}
	var got []string
	for range 5 {
		page, err := e.app.ListWebhooks(e.ctx, c, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range page.Rows {
			got = append(got, ep.ID)
		}
		if !page.HasMore {
			break
		}
		p.Cursor = page.Next
	}
	if want := []string{own1.ID, own2.ID, own3.ID}; !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	if ep, err := e.app.Webhook(e.ctx, c, own1.ID); err != nil || ep.ID != own1.ID {
		t.Errorf("get within the grant: %+v, %v", ep, err)
	}
	if ep, err := e.app.DeleteWebhook(e.ctx, c, own2.ID); err != nil || ep.ID != own2.ID {
		t.Errorf("delete within the grant: %+v, %v", ep, err)
	}
	if _, err := e.db.GetWebhookEndpoint(e.ctx, e.boot.ProjectID, own2.ID); ErrorCode(err) != ENotFound {
		t.Errorf("deleted endpoint still read: %v", err)
	}
}

func TestUpdateWebhook(t *testing.T) {
	e := newEnv(t)
	mine, other := e.boot.Inbox.ID, e.inbox("other@example.com").ID
	ep := e.endpoint([]string{mine})
	admin := e.caller(nil, "webhooks:write")
	restricted := e.caller([]string{mine}, "webhooks:write")
	for _, c := range []struct {
		caller               Caller
		body, param, message string
	}{
		// The secret is refused first, whatever else is wrong.
		{admin, `{"secret":"` + supplied + `","url":"ftp://x"}`, "secret", "Change the secret with POST …/rotate-secret."},
		{admin, `{"url":"ftp://x"}`, "url", "url must be an absolute http or https URL without credentials."},
		{admin, `{"event_types":["nope"]}`, "event_types", `Unknown event type "nope".`},
		{admin, `{"url":null}`, "url", "url must not be null."},
		{admin, `{"event_types":null}`, "event_types", "event_types must not be null."},
		{admin, `{"enabled":null}`, "enabled", "enabled must not be null."},
		{admin, `{"inbox_ids":["ibx_missing"]}`, "inbox_ids", "inbox_ids names an inbox that does not exist."},
		{restricted, `{"inbox_ids":null}`, "inbox_ids", "This key is restricted to some inboxes: inbox_ids must list them."},
		{restricted, `{"inbox_ids":["` + other + `"]}`, "inbox_ids", `Unknown inbox "` + other + `".`},
	} {
		_, err := e.app.UpdateWebhook(e.ctx, c.caller, ep.ID, input(c.body))
		wantError(t, err, EInvalidRequest, c.param)
		if m := ErrorMessage(err); m != c.message {
			t.Errorf("%s: message %q, want %q", c.body, m, c.message)
		}
	}
	got, err := e.app.UpdateWebhook(e.ctx, restricted, ep.ID, input(`{"url":"http://example.org/z","event_types":[],"enabled":false,"description":"off"}`))
	if err != nil || got.URL != "http://example.org/z" || len(got.EventTypes) != 0 || got.Enabled || got.Description != "off" ||
		!slices.Equal(got.InboxIDs, []string{mine}) {
		t.Errorf("update: %+v, %v", got, err)
	}
	got, err = e.app.UpdateWebhook(e.ctx, admin, ep.ID, input(`{"inbox_ids":null,"enabled":true}`))
	if err != nil || got.InboxIDs != nil || !got.Enabled || got.URL != "http://example.org/z" || got.Description != "off" {
		t.Errorf("update inbox_ids null: %+v, %v", got, err)
	}
	// null clears the description, which the object then shows as null.
	got, err = e.app.UpdateWebhook(e.ctx, admin, ep.ID, input(`{"description":null}`))
	if err != nil || got.Description != "" || !got.Enabled || got.URL != "http://example.org/z" {
		t.Errorf("update description null: %+v, %v", got, err)
	}
	// Now for every inbox, the endpoint is outside the restricted grant.
	if _, err := e.app.UpdateWebhook(e.ctx, restricted, ep.ID, untouched(t)); ErrorCode(err) != ENotFound {
		t.Errorf("update an endpoint that left the grant: %v", err)
	}
}

func TestRotateWebhookSecret(t *testing.T) {
	e := newEnv(t)
	ep := e.endpoint(nil)
	c := e.caller(nil, "webhooks:write")
	none := func(any) error { return nil }
	_, first, err := e.app.RotateWebhookSecret(e.ctx, c, ep.ID, none)
	if err != nil || webhook.ValidateSecret(first) != nil {
		t.Fatalf("rotate without input: %q, %v", first, err)
	}
	for _, body := range []string{`{}`, `{"secret":null}`} {
		if _, s, err := e.app.RotateWebhookSecret(e.ctx, c, ep.ID, input(body)); err != nil || s == first || webhook.ValidateSecret(s) != nil {
			t.Errorf("rotate %s: %q, %v; want a new secret", body, s, err)
		}
	}
	_, _, err = e.app.RotateWebhookSecret(e.ctx, c, ep.ID, input(`{"secret":"whsec_c2hvcnQ="}`))
	if wantError(t, err, EInvalidRequest, "secret"); ErrorMessage(err) != "secret must be whsec_ followed by the base64 of 24 to 64 bytes." {
		t.Errorf("rotate to a bad secret: %q", ErrorMessage(err))
	}
	got, s, err := e.app.RotateWebhookSecret(e.ctx, c, ep.ID, input(`{"secret":"`+supplied+`"}`))
	if err != nil || s != supplied || got.ID != ep.ID {
		t.Errorf("rotate to a supplied secret: %+v, %q, %v", got, s, err)
	}
}
