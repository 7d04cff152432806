package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A session finds its key until it expires, is deleted, or the key is
// revoked; only the hash of its id is stored.
func TestSessions(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	now := time.Now()
	find := func(id string, at time.Time) error {
		t.Helper()
		k, _, err := db.SessionKey(ctx, HashToken(id), at)
		if err == nil && k.ID != b.AdminKey.ID {
			t.Fatalf("session of key %s, want %s", k.ID, b.AdminKey.ID)
		}
		return err
	}
	id, err := db.CreateSession(ctx, b.AdminKey.ID, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := find(id, now); err != nil {
		t.Fatalf("a new session: %v", err)
	}
	var n int
	if err := db.r.QueryRow(`SELECT count(*) FROM console_sessions WHERE id_hash = ?`, []byte(id)).Scan(&n); err != nil || n != 0 {
		t.Errorf("the session id is stored as it is (%d, %v)", n, err)
	}
	if err := find(id, now.Add(time.Hour)); !errors.Is(err, ErrNotFound) {
		t.Errorf("an expired session: %v", err)
	}
	if err := find(id+"0", now); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown session: %v", err)
	}
	if err := db.DeleteSession(ctx, HashToken(id)); err != nil {
		t.Fatal(err)
	}
	if err := find(id, now); !errors.Is(err, ErrNotFound) {
		t.Errorf("a deleted session: %v", err)
	}
	if err := db.DeleteSession(ctx, HashToken(id)); err != nil {
		t.Errorf("deleting it again: %v", err)
	}

	k, _, err := db.CreateKey(ctx, b.ProjectID, "k", []string{"threads:read"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateSession(ctx, k.ID, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeKey(ctx, b.ProjectID, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.SessionKey(ctx, HashToken(other), now); !errors.Is(err, ErrNotFound) {
		t.Errorf("the session of a revoked key: %v", err)
	}
	if _, err := db.CreateSession(ctx, k.ID, now.Add(time.Hour)); !errors.Is(err, ErrNotFound) {
		t.Errorf("a session for a revoked key: %v", err)
	}
}
