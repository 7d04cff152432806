package smtp

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"
)

// benchMessage builds a realistic multipart/alternative message of about
// size bytes, without its Message-ID (added per send); every other message
// replies to the one before it. refs > 0
// gives every message a References header of that many ids (a long
// mailing-list thread), most of them never stored.
func benchMessage(i, size, refs int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "From: Load Tester <load@example.com>\r\nTo: inbox@localhost\r\nSubject: load %d\r\n", i)
	b.WriteString("Date: Mon, 30 Nov 2026 09:00:00 +0000\r\n")
	if i%2 == 1 {
		fmt.Fprintf(&b, "In-Reply-To: <parent.%d@example.com>\r\nReferences: <root@example.com> <parent.%d@example.com>\r\n", i-1, i-1)
	}
	if refs > 0 {
		b.WriteString("References:")
		for r := range refs {
			fmt.Fprintf(&b, " <list.%d.%d@lists.example.org>\r\n", i%50, r)
		}
	}
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n")
	line := "The quick brown fox jumps over the lazy dog, again and again.\r\n"
	half := max((size-b.Len())/2, 0)
	b.WriteString("--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	for n := 0; n < half; n += len(line) {
		b.WriteString(line)
	}
	b.WriteString("--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body>")
	for n := 0; n < half; n += len(line) + 7 {
		b.WriteString("<p>" + strings.TrimSpace(line) + "</p>\r\n")
	}
	b.WriteString("</body></html>\r\n--b1--\r\n")
	return b.String()
}

// BenchmarkIngest measures SMTP DATA → committed in SQLite (fsync on) over
// 8 reused connections, and reports msgs/s and the p99 of end-of-DATA →
// 250.
func BenchmarkIngest(b *testing.B) {
	// refs=50 adds about 2 KB of References; 6KB/refs=0 is its size-matched
	// control, so the cost of threading shows apart from the cost of bytes.
	for _, bc := range []struct{ size, refs int }{{4 << 10, 0}, {4 << 10, 50}, {6 << 10, 0}, {64 << 10, 0}} {
		size := bc.size
		b.Run(fmt.Sprintf("size=%dKB/refs=%d/conns=8", size>>10, bc.refs), func(b *testing.B) {
			e := startBench(b)
			msgs := make([]string, 256)
			for i := range msgs {
				msgs[i] = benchMessage(i, size, bc.refs)
			}
			const conns = 8
			run := time.Now().UnixNano()
			var next atomic.Int64
			lat := make([][]time.Duration, conns)
			b.SetBytes(int64(len(msgs[0])))
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range conns {
				wg.Go(func() {
					c, err := gosmtp.Dial(e.addr)
					if err != nil {
						b.Error(err)
						return
					}
					defer c.Close()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if err := c.Mail("load@example.com", nil); err != nil {
							b.Error(err)
							return
						}
						if err := c.Rcpt("inbox@localhost", nil); err != nil {
							b.Error(err)
							return
						}
						wc, err := c.Data()
						if err != nil {
							b.Error(err)
							return
						}
						// Every message is unique: a repeated one would be a
						// duplicate delivery, which the store skips.
						fmt.Fprintf(wc, "Message-ID: <bench.%d.%d@example.com>\r\n", run, i)
						io.WriteString(wc, msgs[i%int64(len(msgs))])
						t0 := time.Now()
						if err := wc.Close(); err != nil {
							b.Error(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}

func startBench(b *testing.B) *env {
	return start(b, Config{MaxMessageBytes: 25 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil)
}
