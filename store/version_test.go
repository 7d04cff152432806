package store

import (
	"context"
	"testing"
)

// DataVersion moves with every commit, this process's or another's, and
// only then.
func TestDataVersion(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	version := func() int64 {
		t.Helper()
		v, err := db.DataVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v0 := version()
	if _, err := db.ListThreads(ctx, b.Inbox.ID, Query{}, nil, 10); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != v0 {
		t.Errorf("a read moved the version from %d to %d", v0, v)
	}
	if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Message-ID: <v@x>\r\nSubject: v\r\n\r\nv\r\n")); err != nil {
		t.Fatal(err)
	}
	v1 := version()
	if v1 == v0 {
		t.Error("an ingest did not move the version")
	}
	// Another process's commit (the CLI revoking a key, say).
	if _, err := otherConnection(t, db).Exec(`UPDATE api_keys SET name = 'renamed'`); err != nil {
		t.Fatal(err)
	}
	if v := version(); v == v1 {
		t.Error("another connection's commit did not move the version")
	}
}
