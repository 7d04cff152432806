package app

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

func TestCursorRoundTrip(t *testing.T) {
	e := newEnv(t)
	scope := CursorScope{Project: "prj_1", Inbox: "ibx_1", List: "threads", Query: "from:a"}
	want := store.TimeKey{At: 1700000000000, ID: "thr_1"}
	c, err := e.app.encodeCursor(scope, want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Position[store.TimeKey](e.app, scope, c)
	if err != nil || got == nil || *got != want {
		t.Fatalf("Position = %v, %v; want %v", got, err, want)
	}
	if got, err := Position[store.TimeKey](e.app, scope, ""); got != nil || err != nil {
		t.Errorf("no cursor: %v, %v; want nil, nil", got, err)
	}
}

// A tampered, foreign, expired or other-scope cursor is ErrInvalidCursor
// (SPEC §5.2), each for its own reason.
func TestCursorRefused(t *testing.T) {
	e := newEnv(t)
	scope := CursorScope{Project: "prj_1", Inbox: "ibx_1", List: "inbox_messages", Query: "q", Extra: "inbound"}
	c, err := e.app.encodeCursor(scope, store.TimeKey{At: 1, ID: "msg_1"})
	if err != nil {
		t.Fatal(err)
	}
	body, mac, _ := strings.Cut(c, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	forged := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"msg_1"`, `"msg_2"`, 1))) + "." + mac
	other := &App{now: e.clock.Now, secret: []byte("another database's secret")}
	foreign, err := other.encodeCursor(scope, store.TimeKey{At: 1, ID: "msg_1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c2 := range []struct {
		name   string
		cursor string
		scope  CursorScope
	}{
		{"no signature", body, scope},
		{"signature not base64", body + ".!!", scope},
		{"body changed", forged, scope},
		{"signature changed", body + "." + mac[:len(mac)-2] + "AA", scope},
		{"another server's", foreign, scope},
		{"another project", c, CursorScope{Project: "prj_2", Inbox: "ibx_1", List: "inbox_messages", Query: "q", Extra: "inbound"}},
		{"another inbox", c, CursorScope{Project: "prj_1", Inbox: "ibx_2", List: "inbox_messages", Query: "q", Extra: "inbound"}},
		{"another list", c, CursorScope{Project: "prj_1", Inbox: "ibx_1", List: "threads", Query: "q", Extra: "inbound"}},
		{"another thread", c, CursorScope{Project: "prj_1", Inbox: "ibx_1", List: "inbox_messages", Thread: "thr_1", Query: "q", Extra: "inbound"}},
		{"another search", c, CursorScope{Project: "prj_1", Inbox: "ibx_1", List: "inbox_messages", Query: "r", Extra: "inbound"}},
		{"another filter", c, CursorScope{Project: "prj_1", Inbox: "ibx_1", List: "inbox_messages", Query: "q", Extra: "outbound"}},
	} {
		t.Run(c2.name, func(t *testing.T) {
			_, err := Position[store.TimeKey](e.app, c2.scope, c2.cursor)
			if err != ErrInvalidCursor {
				t.Errorf("err = %v, want ErrInvalidCursor", err)
			}
		})
	}
}

// A cursor is valid for CursorTTL on the App's clock, and not a second
// longer.
func TestCursorExpires(t *testing.T) {
	e := newEnv(t)
	scope := CursorScope{Project: "prj_1", List: "keys"}
	c, err := e.app.encodeCursor(scope, store.TimeKey{At: 1, ID: "key_1"})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(CursorTTL - time.Second)
	if _, err := Position[store.TimeKey](e.app, scope, c); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	e.clock.Advance(time.Second)
	if _, err := Position[store.TimeKey](e.app, scope, c); err != ErrInvalidCursor {
		t.Fatalf("at expiry: %v, want ErrInvalidCursor", err)
	}
}
