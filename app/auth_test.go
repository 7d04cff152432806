package app

import "testing"

// Authenticate: the admin token finds its key; no token, a wrong one and
// a revoked one are all the same unauthenticated answer, the revoked one
// at the very next call.
func TestAuthenticate(t *testing.T) {
	e := newEnv(t)
	c, _, err := e.app.Authenticate(e.ctx, e.boot.AdminToken)
	if err != nil || c.ID != e.boot.AdminKey.ID || c.ProjectID != e.boot.ProjectID {
		t.Fatalf("admin token: %+v %v", c, err)
	}
	k, token, err := e.db.CreateKey(e.ctx, e.boot.ProjectID, "ci", []string{"inboxes:read"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, _, err := e.app.Authenticate(e.ctx, token); err != nil || c.ID != k.ID {
		t.Fatalf("new key: %+v %v", c, err)
	}
	if err := e.db.RevokeKey(e.ctx, e.boot.ProjectID, k.ID); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"no token": "", "a wrong one": "inboxd_nope", "a revoked one": token} {
		_, _, err := e.app.Authenticate(e.ctx, tok)
		wantError(t, err, EUnauthenticated, "")
		if err != ErrUnauthenticated {
			t.Errorf("%s: %v, want ErrUnauthenticated", name, err)
		}
	}
}
