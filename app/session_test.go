package app

import (
	"testing"
	"time"
)

// A session stands for the key it was exchanged for, with its grant, until
// it is ended, expires, or the key is revoked; a bad token starts none.
func TestSessions(t *testing.T) {
	e := newEnv(t)
	k, token, err := e.db.CreateKey(e.ctx, e.boot.ProjectID, "console", []string{"threads:read", "messages:read"}, []string{e.boot.Inbox.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.app.StartSession(e.ctx, token+"x"); ErrorCode(err) != EUnauthenticated {
		t.Fatalf("a wrong token: %v", err)
	}
	id, c, err := e.app.StartSession(e.ctx, token)
	if err != nil || c.ID != k.ID {
		t.Fatalf("StartSession: %v %+v", err, c)
	}
	got, _, err := e.app.Session(e.ctx, id)
	if err != nil || got.ID != k.ID || !got.Has("messages:read") || got.Has("messages:send") || !got.CanSee(e.boot.Inbox.ID) || got.CanSee("ibx_other") {
		t.Fatalf("Session: %v %+v", err, got)
	}
	for _, bad := range []string{"", id + "0", token} {
		if _, _, err := e.app.Session(e.ctx, bad); err != ErrSessionEnded {
			t.Errorf("Session(%q) = %v", bad, err)
		}
	}

	// Expiry, by the app's clock.
	e.clock.Advance(SessionTTL - time.Millisecond)
	if _, _, err := e.app.Session(e.ctx, id); err != nil {
		t.Errorf("just before expiry: %v", err)
	}
	e.clock.Advance(time.Millisecond)
	if _, _, err := e.app.Session(e.ctx, id); err != ErrSessionEnded {
		t.Errorf("at expiry: %v", err)
	}

	// Sign-out, twice.
	id, _, err = e.app.StartSession(e.ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := e.app.EndSession(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := e.app.Session(e.ctx, id); err != ErrSessionEnded {
		t.Errorf("after sign-out: %v", err)
	}

	// A revoked key ends its sessions at once.
	id, _, err = e.app.StartSession(e.ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.app.RevokeKey(e.ctx, e.admin, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.app.Session(e.ctx, id); err != ErrSessionEnded {
		t.Errorf("after the key's revocation: %v", err)
	}
	if _, _, err := e.app.StartSession(e.ctx, token); ErrorCode(err) != EUnauthenticated {
		t.Errorf("a revoked key starts a session: %v", err)
	}
}
