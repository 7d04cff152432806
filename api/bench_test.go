package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inboxd/inboxd/outbound"
	"github.com/inboxd/inboxd/store"
)

// BenchmarkSendLocal measures sends to a local inbox from 8 concurrent API
// clients, through to local delivery (queued, delivered, threaded on both
// sides): sends/s counts until the last copy has landed. fsync is on, as
// in production.
func BenchmarkSendLocal(b *testing.B) {
	e := newEnv(b, Config{}, func(o *store.Options) { o.NoFsync = false; o.Now = time.Now })
	ctx, cancel := context.WithCancel(context.Background())
	// The store runs on the wall clock here (fsync and all, as in
	// production); the worker must read the same clock.
	w := outbound.NewWorker(e.db, outbound.WorkerConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now})
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	bob, err := e.db.CreateInbox(context.Background(), e.boot.ProjectID, store.NewInbox{Address: "bob@localhost"})
	if err != nil {
		b.Fatal(err)
	}
	url := e.srv.URL + e.path("/inboxes/%s/messages", e.boot.Inbox.ID)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				body := fmt.Sprintf(`{"to":["bob@localhost"],"subject":"load %d","text":"hello number %d"}`, i, i)
				req, _ := http.NewRequest("POST", url, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+e.admin)
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 202 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	accepted := time.Since(start)
	// Wait, woken by commits, until no delivery is pending.
	deadline := time.After(60 * time.Second)
	for {
		changed := e.db.Changed()
		if _, pending, err := e.db.NextDeliveryAt(context.Background()); err != nil {
			b.Fatal(err)
		} else if !pending {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			b.Fatal("local deliveries did not finish")
		}
	}
	total := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/accepted.Seconds(), "accepted/s")
	b.ReportMetric(float64(b.N)/total.Seconds(), "delivered/s")
	if msgs, err := e.db.InboxMessages(context.Background(), bob.ID); err != nil || len(msgs) != b.N {
		b.Fatalf("bob holds %d messages, want %d (%v)", len(msgs), b.N, err)
	}
}

// BenchmarkThreadMessagesPage reads pages of 50 from one thread with 16
// concurrent clients over HTTP.
func BenchmarkThreadMessagesPage(b *testing.B) {
	e := newEnv(b, Config{})
	var root store.Delivered
	for i := range 200 {
		irt := ""
		if i > 0 {
			irt = "In-Reply-To: <p0@x>\r\n"
		}
		d := e.deliver(e.boot.Inbox.ID, rawMail(fmt.Sprintf("p%d@x", i), "page", "Some text for the page benchmark.", irt))
		if i == 0 {
			root = d
		}
	}
	url := e.srv.URL + e.path("/inboxes/%s/threads/%s/messages?limit=50", e.boot.Inbox.ID, root.ThreadID)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+e.admin)
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
