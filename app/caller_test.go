package app

import (
	"testing"

	"github.com/inboxd/inboxd/store"
)

func TestCallerNeed(t *testing.T) {
	c := Caller{Key: store.Key{Scopes: []string{"inboxes:read"}}}
	if err := c.Need("inboxes:read"); err != nil {
		t.Fatalf("Need(held scope) = %v", err)
	}
	err := c.Need("keys:write")
	wantError(t, err, EPermissionDenied, "")
	if got, want := ErrorMessage(err), "This API key lacks the scope keys:write."; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

func TestCallerCanSee(t *testing.T) {
	for _, c := range []struct {
		grant []string
		inbox string
		want  bool
	}{
		{nil, "ibx_a", true}, // unrestricted
		{[]string{"ibx_a", "ibx_b"}, "ibx_b", true},
		{[]string{"ibx_a"}, "ibx_b", false},
		{[]string{}, "ibx_a", false}, // restricted to no inbox
	} {
		if got := (Caller{Key: store.Key{InboxIDs: c.grant}}).CanSee(c.inbox); got != c.want {
			t.Errorf("grant %v CanSee(%s) = %v, want %v", c.grant, c.inbox, got, c.want)
		}
	}
}

func TestCallerCovers(t *testing.T) {
	rw := []string{"inboxes:read", "inboxes:write"}
	for _, c := range []struct {
		name   string
		caller store.Key
		other  store.Key
		want   bool
	}{
		{"same grant", store.Key{Scopes: rw}, store.Key{Scopes: rw}, true},
		{"fewer scopes", store.Key{Scopes: rw}, store.Key{Scopes: rw[:1]}, true},
		{"a scope the caller lacks", store.Key{Scopes: rw[:1]}, store.Key{Scopes: rw}, false},
		{"unrestricted covers restricted", store.Key{Scopes: rw}, store.Key{Scopes: rw, InboxIDs: []string{"ibx_a"}}, true},
		{"restricted does not cover unrestricted", store.Key{Scopes: rw, InboxIDs: []string{"ibx_a"}}, store.Key{Scopes: rw}, false},
		{"a subset of the inboxes", store.Key{Scopes: rw, InboxIDs: []string{"ibx_a", "ibx_b"}}, store.Key{Scopes: rw, InboxIDs: []string{"ibx_b"}}, true},
		{"an inbox outside", store.Key{Scopes: rw, InboxIDs: []string{"ibx_a"}}, store.Key{Scopes: rw, InboxIDs: []string{"ibx_a", "ibx_b"}}, false},
		{"no inboxes at all", store.Key{Scopes: rw, InboxIDs: []string{"ibx_a"}}, store.Key{Scopes: rw, InboxIDs: []string{}}, true},
	} {
		if got := (Caller{Key: c.caller}).Covers(c.other); got != c.want {
			t.Errorf("%s: Covers = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCallerMayGrant(t *testing.T) {
	restricted := Caller{Key: store.Key{InboxIDs: []string{"ibx_a", "ibx_b"}}}
	unrestricted := Caller{}
	for _, c := range []struct {
		name    string
		caller  Caller
		ids     OptionalIDs
		message string // "": allowed
	}{
		{"left out", restricted, OptionalIDs{}, ""},
		{"within the grant", restricted, OptionalIDs{Set: true, IDs: []string{"ibx_b"}}, ""},
		{"none", restricted, OptionalIDs{Set: true, IDs: []string{}}, ""},
		{"outside the grant", restricted, OptionalIDs{Set: true, IDs: []string{"ibx_a", "ibx_c"}}, `Unknown inbox "ibx_c".`},
		{"every inbox, restricted", restricted, OptionalIDs{Set: true}, "This key is restricted to some inboxes: inbox_ids must list them."},
		{"every inbox, unrestricted", unrestricted, OptionalIDs{Set: true}, ""},
		{"any inbox, unrestricted", unrestricted, OptionalIDs{Set: true, IDs: []string{"ibx_c"}}, ""},
	} {
		err := c.caller.MayGrant(c.ids)
		if c.message == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		wantError(t, err, EInvalidRequest, "inbox_ids")
		if m := ErrorMessage(err); m != c.message {
			t.Errorf("%s: %q, want %q", c.name, m, c.message)
		}
	}
}
