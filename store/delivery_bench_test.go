package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkClaimDeliveries claims from behind a backlog of 1,900 due
// recipients of one domain (19 messages of 100; a claim with a limit per
// domain looks 2,000 deep), with a few messages for another domain behind
// them: "relay" takes the backlog's first
// message, as --outbound relay does; "domain_full" has the backlog's
// domain at its limit, as --outbound direct does while that domain is
// slow, and takes one of the others. The leases are over at once, so
// every round finds the same queue.
func BenchmarkClaimDeliveries(b *testing.B) {
	db, boot, _ := openRunning(b, Options{Path: filepath.Join(b.TempDir(), "inboxd.db"), NoFsync: true})
	ctx := context.Background()
	rcpts := make([]string, 100)
	for m := range 19 {
		for i := range rcpts {
			rcpts[i] = fmt.Sprintf("r%d.%d@slow.example", m, i)
		}
		queueRelay(b, db, boot.Inbox.ID, rcpts...)
	}
	for range 10 {
		queueRelay(b, db, boot.Inbox.ID, "someone@fast.example")
	}
	for _, bc := range []struct {
		name string
		c    Claim
		want string
	}{
		{"relay", Claim{Messages: 1, Lease: -time.Hour}, "slow.example"},
		{"domain_full", Claim{Messages: 1, PerDomain: 4, InFlight: map[string]int{"slow.example": 4}, Lease: -time.Hour}, "fast.example"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cs, err := db.ClaimDeliveries(ctx, bc.c)
				if err != nil || len(cs) == 0 || cs[0].Domain != bc.want {
					b.Fatalf("claimed %d (%v), want a message to %s", len(cs), err, bc.want)
				}
			}
		})
	}
}
