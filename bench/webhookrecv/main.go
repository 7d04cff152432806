// Command webhookrecv is the webhook side of the load tools: an HTTP
// receiver that accepts Standard Webhooks POSTs (verifying nothing, always
// answering 204) and measures, per event, the time from the event's
// created_at to the request's arrival. It reports the count, p50/p90/p99/max
// and the rate per event type, as text and as JSON, like the other tools.
//
//	go run ./bench/webhookrecv -addr 127.0.0.1:9090 -n 10000 -json hooks.json
//
// Register http://127.0.0.1:9090/ as a webhook endpoint, then send mail
// (bench/smtpload). It stops after -n requests, after -duration, or on
// Ctrl-C, and prints the report. The address actually bound (port 0 picks
// a free one) is printed first, so a script can wait for that line.
//
// created_at is stamped in the event's own transaction, just before the
// SMTP 250, so the figure is "committed → webhook received". It carries
// milliseconds only: each latency reads up to 1 ms high. The message's
// X-Inboxd-Bench-Sent header (set by smtpload) is not part of the event,
// so it cannot be used here. The sender and this receiver must share a
// clock: run both on one machine.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/inboxd/inboxd/bench/loadstat"
)

type config struct {
	addr, jsonPath string
	n              int
	duration       time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhookrecv:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("webhookrecv", flag.ContinueOnError)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:9090", "listen `host:port` (port 0 picks a free one)")
	fs.IntVar(&cfg.n, "n", 0, "stop after this many requests (0: until -duration or Ctrl-C)")
	fs.DurationVar(&cfg.duration, "duration", 0, "stop after this long (0: no limit)")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the report as JSON to this `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.n < 0 || cfg.duration < 0 {
		return errors.New("-n and -duration must not be negative")
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "webhookrecv: listening on %s\n", ln.Addr())

	if cfg.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	r := newReceiver(cfg.n)
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case <-r.full:
	case err := <-served:
		return err
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutCtx)

	rep := r.report(cfg)
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if cfg.jsonPath != "" {
		return rep.WriteJSONFile(cfg.jsonPath)
	}
	return nil
}

// receiver records one latency per request under the event's type.
type receiver struct {
	rec  *loadstat.Recorder
	want int
	full chan struct{} // closed once want requests have arrived

	mu          sync.Mutex
	seen        int
	first, last time.Time
	fullOnce    sync.Once
}

func newReceiver(want int) *receiver {
	return &receiver{rec: loadstat.NewRecorder(), want: want, full: make(chan struct{})}
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(req.Body)
	w.WriteHeader(http.StatusNoContent) // any 2xx is a delivery; answer before recording
	var ev struct {
		Type      string    `json:"type"`
		CreatedAt time.Time `json:"created_at"`
	}
	switch {
	case err != nil:
		r.rec.Fail("request", "read")
	case req.Method != http.MethodPost:
		r.rec.Fail("request", req.Method)
	case json.Unmarshal(body, &ev) != nil || ev.CreatedAt.IsZero():
		r.rec.Fail("request", "bad-event")
	default:
		if ev.Type == "" {
			ev.Type = "untyped"
		}
		r.rec.Observe(ev.Type, arrived.Sub(ev.CreatedAt), len(body))
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen++
	if r.first.IsZero() {
		r.first = arrived
	}
	r.last = arrived
	if r.want > 0 && r.seen >= r.want {
		r.fullOnce.Do(func() { close(r.full) })
	}
}

// report summarizes the run; the rate is over the span from the first
// request to the last, so time spent waiting for the sender is not counted.
func (r *receiver) report(cfg config) loadstat.Report {
	r.mu.Lock()
	span := r.last.Sub(r.first)
	seen := r.seen
	r.mu.Unlock()
	if span <= 0 {
		span = time.Second // fewer than two requests: no span to divide by
	}
	return r.rec.Report("webhookrecv", map[string]any{"addr": cfg.addr, "n": cfg.n, "requests": seen}, span)
}
