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
// ingest. Messages (half of them replies) are parsed and prepared (hashed,
// packed, search text) before the timer, as SMTP sessions do in parallel;
// in the timer, 8 goroutines hand them to the writer and wait for each
// answer, as 8 sessions would, and then indexes them for search. It runs
// in chunks of 512 messages so that the prepared ones do not hold the heap
// far above a server's. fsync is off:
// its wall time is the disk's, and the writer's work is what this measures.
func BenchmarkIngestWriter(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			db, boot, _ := openRunning(b, Options{Path: filepath.Join(b.TempDir(), "inboxd.db"), NoFsync: true})
			ctx := context.Background()
			const chunk = 512
			reqs := make([]*writeReq, 0, chunk)
			b.SetBytes(int64(len(benchMessage(boot.Inbox.ID, 0, size).Raw)))
			b.ResetTimer()
			for start := 0; start < b.N; start += chunk {
				b.StopTimer()
				reqs = reqs[:0]
				for i := start; i < min(start+chunk, b.N); i++ {
					req, _ := db.ingestReq(db.prepare(benchMessage(boot.Inbox.ID, i, size)))
					reqs = append(reqs, req)
				}
				b.StartTimer()
				var next atomic.Int64
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for i := next.Add(1) - 1; i < int64(len(reqs)); i = next.Add(1) - 1 {
							db.writeQ <- reqs[i]
							if err := <-reqs[i].done; err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				// Index before the timer stops, so that no pass runs unmeasured.
				if err := db.awaitSearch(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchMessage returns message i of BenchmarkIngestWriter: about size
// bytes, and a reply when i is odd, to a message far enough back to be
// stored already.
func benchMessage(inboxID string, i, size int) *Incoming {
	headers := fmt.Sprintf("From: A <a@example.com>\r\nTo: inbox@localhost\r\nSubject: load %d\r\nMessage-ID: <bench.%d@example.com>\r\n", i, i)
	if i%2 == 1 && i >= 16 {
		headers += fmt.Sprintf("In-Reply-To: <bench.%d@example.com>\r\nReferences: <bench.%d@example.com>\r\n", i-15, i-15)
	}
	return incoming(inboxID, benchRaw(headers, size/2-300))
}
