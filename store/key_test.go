package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
)

// Authenticate serves keys from its cache while the database is unchanged
// and drops them at the first commit, by this process or another.
func TestAuthenticate(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	_, tok, err := db.CreateKey(ctx, b.ProjectID, "app", []string{"messages:send"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := HashToken(tok)
	// The first use records last_used_at, a commit; the next check caches.
	if _, _, err := db.Authenticate(ctx, h); err != nil {
		t.Fatal(err)
	}
	k, v1, err := db.Authenticate(ctx, h)
	if err != nil || !k.Has("messages:send") || k.LastUsedAt == nil {
		t.Fatalf("key: %+v %v", k, err)
	}
	if v, _ := db.DataVersion(ctx); v != v1 {
		t.Fatalf("version %d, DataVersion %d", v1, v)
	}
	if _, ok := db.keys.get(h, v1); !ok {
		t.Fatal("key not cached")
	}
	if _, _, err := db.Authenticate(ctx, HashToken(tok+"x")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("wrong token: %v", err)
	}

	// The CLI revokes through its own connection.
	if _, err := otherConnection(t, db).Exec(`UPDATE api_keys SET revoked_at = 1 WHERE token_hash = ?`, h[:]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Authenticate(ctx, h); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoked key still authenticates: %v", err)
	}
}

// otherConnection opens db's file as another process would (the CLI).
func otherConnection(t *testing.T, db *DB) *sql.DB {
	t.Helper()
	var path string
	if err := db.r.QueryRow(`SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)") // the writer may hold the lock a moment
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}
