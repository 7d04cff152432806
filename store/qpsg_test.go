package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestConnectionsRunWithQPSG checks that every connection of the writer,
// the reader pool and the version connection holds the query planner
// stability guarantee (qpsg.go), all of the pool's connections at once,
// and that the call reads the setting back truthfully: cleared and set
// again, it says so.
func TestConnectionsRunWithQPSG(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	pools := map[string]struct {
		db *sql.DB
		n  int
	}{"writer": {db.w, 1}, "readers": {db.r, db.r.Stats().MaxOpenConnections}, "version": {db.ver, 1}}
	for name, p := range pools {
		if p.n < 1 {
			t.Fatalf("%s: pool of %d connections", name, p.n)
		}
		var held []*sql.Conn
		for range p.n {
			c, err := p.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
			if on := rawQPSG(t, c, -1); !on {
				t.Errorf("%s: connection %d runs without the query planner stability guarantee", name, len(held))
			}
		}
		for _, c := range held {
			c.Close()
		}
	}

	// A connection opened outside the store gets it too (the hook is the
	// driver's), and the setting reads back as it is set.
	other, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, step := range []struct {
		onoff int32
		want  bool
	}{{-1, true}, {0, false}, {-1, false}, {1, true}, {-1, true}} {
		if got := rawQPSG(t, c, step.onoff); got != step.want {
			t.Fatalf("qpsg(%d) = %v, want %v", step.onoff, got, step.want)
		}
	}
}

func rawQPSG(t *testing.T, c *sql.Conn, onoff int32) bool {
	t.Helper()
	var on bool
	if err := c.Raw(func(dc any) (err error) {
		on, err = qpsg(dc, onoff)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return on
}
