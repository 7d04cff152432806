package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkIngestWriter measures the single writer, the serial part of
// ingest: b.N messages (half of them replies) are parsed before the timer
// and handed to Ingest by 8 goroutines, as 8 SMTP sessions would; the
// timer stops once they are stored and indexed for search. fsync is off:
// its wall time is the disk's, and the writer's CPU is what this measures.
func BenchmarkIngestWriter(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			db, boot, _ := openRunning(b, Options{Path: filepath.Join(b.TempDir(), "inboxd.db"), NoFsync: true})
			msgs := make([]*Incoming, b.N)
			for i := range msgs {
				headers := fmt.Sprintf("From: A <a@example.com>\r\nTo: inbox@localhost\r\nSubject: load %d\r\nMessage-ID: <bench.%d@example.com>\r\n", i/2, i)
				if i%2 == 1 {
					headers += fmt.Sprintf("In-Reply-To: <bench.%d@example.com>\r\nReferences: <bench.%d@example.com>\r\n", i-1, i-1)
				}
				msgs[i] = incoming(boot.Inbox.ID, benchRaw(headers, size/2-300))
			}
			b.SetBytes(int64(len(msgs[0].Raw)))
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 8 {
				wg.Go(func() {
					for i := next.Add(1) - 1; i < int64(len(msgs)); i = next.Add(1) - 1 {
						if _, err := db.Ingest(ctx, msgs[i]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := db.awaitSearch(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}
