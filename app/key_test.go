package app

import (
	"slices"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

// key creates a key in the bootstrapped project, a millisecond after the
// one before it, and returns it with its token.
func (e *env) key(name string, inboxes []string, scopes ...string) (store.Key, string) {
	e.t.Helper()
	e.clock.Advance(time.Millisecond)
	k, token, err := e.db.CreateKey(e.ctx, e.boot.ProjectID, name, scopes, inboxes)
	if err != nil {
		e.t.Fatal(err)
	}
	return k, token
}

func TestKeyOperationsNeedKeysWrite(t *testing.T) {
	e := newEnv(t)
	c := e.caller(nil, "inboxes:read", "inboxes:write")
	other, _ := e.key("other", nil, "inboxes:read")
	for name, op := range map[string]func() error{
		"list":   func() error { _, err := e.app.ListKeys(e.ctx, c, PageParams{Limit: "x"}); return err },
		"create": func() error { _, _, err := e.app.CreateKey(e.ctx, c, untouched(t)); return err },
		"revoke": func() error { return e.app.RevokeKey(e.ctx, c, other.ID) },
	} {
		err := op()
		wantError(t, err, EPermissionDenied, "")
		if m := ErrorMessage(err); m != "This API key lacks the scope keys:write." {
			t.Errorf("%s: %q", name, m)
		}
	}
	if k, err := e.db.GetKey(e.ctx, e.boot.ProjectID, other.ID); err != nil || k.ID != other.ID {
		t.Errorf("key after a refused revoke: %v", err)
	}
}

// A key can hand out only what its own grant holds.
func TestCreateKeyGrantRules(t *testing.T) {
	e := newEnv(t)
	a, b := e.inbox("a@example.com"), e.inbox("b@example.com")
	restricted := e.caller([]string{a.ID}, "keys:write", "inboxes:read")
	for _, c := range []struct {
		name    string
		caller  Caller
		body    string
		param   string
		message string
	}{
		{"no scopes", restricted, `{"scopes":[]}`, "scopes", "scopes must list at least one scope."},
		{"unknown scope", restricted, `{"scopes":["inboxes:read","mail:everything"]}`, "scopes", `Unknown scope "mail:everything".`},
		{"a scope not held", restricted, `{"scopes":["inboxes:write"]}`, "scopes", `Cannot grant scope "inboxes:write": this key does not hold it.`},
		{"every inbox from a restricted key", restricted, `{"scopes":["inboxes:read"],"inbox_ids":null}`, "inbox_ids", "This key is restricted to some inboxes: inbox_ids must list them."},
		{"an inbox outside the grant", restricted, `{"scopes":["inboxes:read"],"inbox_ids":["` + b.ID + `"]}`, "inbox_ids", `Unknown inbox "` + b.ID + `".`},
		{"an inbox that does not exist", e.admin, `{"scopes":["inboxes:read"],"inbox_ids":["ibx_missing"]}`, "inbox_ids", "inbox_ids names an inbox that does not exist."},
	} {
		_, _, err := e.app.CreateKey(e.ctx, c.caller, input(c.body))
		wantError(t, err, EInvalidRequest, c.param)
		if m := ErrorMessage(err); m != c.message {
			t.Errorf("%s: message %q, want %q", c.name, m, c.message)
		}
	}
	for _, c := range []struct {
		name   string
		caller Caller
		body   string
		want   []string
	}{
		{"inbox_ids left out: the caller's own", restricted, `{"scopes":["inboxes:read"]}`, []string{a.ID}},
		{"inbox_ids within the grant", restricted, `{"scopes":["inboxes:read"],"inbox_ids":["` + a.ID + `"]}`, []string{a.ID}},
		{"every inbox from an unrestricted key", e.admin, `{"scopes":["inboxes:read"],"inbox_ids":null}`, nil},
		{"scopes and inboxes named twice", restricted, `{"scopes":["inboxes:read","keys:write","inboxes:read"],"inbox_ids":["` + a.ID + `","` + a.ID + `"]}`, []string{a.ID}},
	} {
		k, token, err := e.app.CreateKey(e.ctx, c.caller, input(c.body))
		if err != nil || token == "" || !slices.Equal(k.InboxIDs, c.want) || (c.want == nil) != (k.InboxIDs == nil) {
			t.Errorf("%s: %+v, %q, %v; want inboxes %v", c.name, k, token, err, c.want)
			continue
		}
		if sc := slices.Clone(k.Scopes); len(sc) != len(slices.Compact(slices.Sorted(slices.Values(sc)))) {
			t.Errorf("%s: scopes %v repeat", c.name, k.Scopes)
		}
		if got, _, err := e.db.Authenticate(e.ctx, store.HashToken(token)); err != nil || got.ID != k.ID {
			t.Errorf("%s: the token does not authenticate: %v", c.name, err)
		}
	}
}

// A restricted caller lists only the keys its grant covers; the pages
// stay full and has_more exact around the ones it may not see.
func TestListKeysOnlyCovered(t *testing.T) {
	e := newEnv(t)
	a, b := e.inbox("a@example.com"), e.inbox("b@example.com")
	k1, _ := e.key("a reader", []string{a.ID}, "inboxes:read")
	e.key("b reader", []string{b.ID}, "inboxes:read")
	k3, _ := e.key("a admin", []string{a.ID}, "inboxes:read", "keys:write")
	e.key("a writer", []string{a.ID}, "inboxes:write")
	e.key("everywhere", nil, "inboxes:read")
	c := e.caller([]string{a.ID}, "inboxes:read", "keys:write")
	p := PageParams{Limit: "1"}
	var got []string
	for range 5 {
		page, err := e.app.ListKeys(e.ctx, c, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range page.Rows {
			got = append(got, k.ID)
		}
		if !page.HasMore {
			break
		}
		p.Cursor = page.Next
	}
	if want := []string{k1.ID, k3.ID}; !slices.Equal(got, want) {
		t.Errorf("keys listed: %v, want %v", got, want)
	}
}

// Revoking a key outside the caller's grant answers exactly like revoking
// one that does not exist, and leaves it working.
func TestRevokeKeyOutsideTheGrantIsNotFound(t *testing.T) {
	e := newEnv(t)
	a, b := e.inbox("a@example.com"), e.inbox("b@example.com")
	mine, mineToken := e.key("mine", []string{a.ID}, "inboxes:read")
	theirs, theirsToken := e.key("theirs", []string{b.ID}, "inboxes:read")
	wider, _ := e.key("wider", []string{a.ID}, "inboxes:read", "messages:read")
	c := e.caller([]string{a.ID}, "inboxes:read", "keys:write")
	for _, id := range []string{theirs.ID, wider.ID, "key_missing"} {
		err := e.app.RevokeKey(e.ctx, c, id)
		if ErrorCode(err) != ENotFound || ErrorMessage(err) != "Resource not found." {
			t.Errorf("revoke %s: %v", id, err)
		}
	}
	if _, _, err := e.db.Authenticate(e.ctx, store.HashToken(theirsToken)); err != nil {
		t.Errorf("a key outside the grant was revoked: %v", err)
	}
	if err := e.app.RevokeKey(e.ctx, c, mine.ID); err != nil {
		t.Fatalf("revoke a covered key: %v", err)
	}
	if _, _, err := e.db.Authenticate(e.ctx, store.HashToken(mineToken)); ErrorCode(err) != ENotFound {
		t.Errorf("a revoked key still authenticates: %v", err)
	}
}
