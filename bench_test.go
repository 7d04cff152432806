package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"
)

// BenchmarkWebhookLatency sends mail over SMTP at 200 messages/s and
// measures, per webhook, the time from the event's commit (its created_at,
// taken just before the 250) to the request arriving at a local receiver;
// endpoints=10 fans every event out to ten receivers.
func BenchmarkWebhookLatency(b *testing.B) {
	for _, endpoints := range []int{1, 10} {
		b.Run(fmt.Sprintf("endpoints=%d/rate=200", endpoints), func(b *testing.B) {
			data := b.TempDir()
			s := startServer(b, data)
			defer s.stop()
			c, project, _ := adminAPI(b, data, s.http)
			ctx := context.Background()
			var mu sync.Mutex
			var lat []time.Duration
			want := b.N * endpoints
			done := make(chan struct{})
			for range endpoints {
				recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					arrived := time.Now()
					body, _ := io.ReadAll(r.Body)
					var ev struct {
						CreatedAt time.Time `json:"created_at"`
					}
					json.Unmarshal(body, &ev)
					mu.Lock()
					lat = append(lat, arrived.Sub(ev.CreatedAt))
					if len(lat) == want {
						close(done)
					}
					mu.Unlock()
				}))
				defer recv.Close()
				var ep struct{ ID string }
				if err := c.do(ctx, "POST", "/v1/projects/"+project+"/webhooks", map[string]any{"url": recv.URL}, "", &ep); err != nil {
					b.Fatal(err)
				}
			}
			const conns = 4
			clients := make(chan *gosmtp.Client, conns)
			for range conns {
				sc, err := gosmtp.Dial(s.smtp)
				if err != nil {
					b.Fatal(err)
				}
				defer sc.Close()
				clients <- sc
			}
			b.ResetTimer()
			tick := time.NewTicker(5 * time.Millisecond) // 200 messages/s
			defer tick.Stop()
			var wg sync.WaitGroup
			for i := range b.N {
				<-tick.C
				sc := <-clients
				wg.Go(func() {
					defer func() { clients <- sc }()
					msg := fmt.Sprintf("Message-ID: <lat%d.%d@x>\r\nSubject: %d\r\n\r\nhello\r\n", time.Now().UnixNano(), i, i)
					if err := sc.SendMail("a@example.com", []string{"inbox@localhost"}, strings.NewReader(msg)); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				b.Fatalf("%d of %d webhooks arrived", len(lat), want)
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}
