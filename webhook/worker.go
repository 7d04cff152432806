package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inboxd/inboxd/store"
)

// DefaultRetrySchedule is SPEC §9's delays between consecutive attempts;
// after the last one fails the delivery is failed.
var DefaultRetrySchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

const (
	// Timeout bounds one attempt: a 2xx within it is success (SPEC §9).
	Timeout = 15 * time.Second
	// PerEndpoint is how many requests one endpoint may have in flight.
	PerEndpoint = 4
	// MaxRetryAfter caps a receiver's Retry-After.
	MaxRetryAfter = time.Hour
	// drainLimit is how much of a response body is read (and thrown away)
	// past the excerpt so the connection can be reused.
	drainLimit = 64 << 10
)

// Clock is the worker's time. Retry decisions and the waits between them
// both use it, so tests move a fake clock instead of sleeping. It must
// agree with the store's clock, which decides what is due.
type Clock interface {
	Now() time.Time
	// At returns a channel that receives once the clock reaches t.
	At(t time.Time) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) At(t time.Time) <-chan time.Time {
	return time.NewTimer(time.Until(t)).C // collected when unreferenced (Go 1.23+)
}

// WorkerConfig configures the delivery worker.
type WorkerConfig struct {
	RetrySchedule []time.Duration // DefaultRetrySchedule when empty
	// Concurrency bounds the requests in flight across all endpoints
	// (default 32); PerEndpoint bounds them per endpoint (default 4).
	Concurrency int
	PerEndpoint int
	Timeout     time.Duration // Timeout when zero
	// Lease is how long a claimed delivery is held by its attempt; a
	// process that dies mid-attempt retries it after this (default 1 min).
	Lease time.Duration
	// ShutdownGrace is how long Run, once its context is done, lets
	// attempts in flight finish before cancelling them (default 10 s).
	ShutdownGrace time.Duration
	// DenyPrivate refuses to connect to any address that is not global
	// unicast (Denied), checked on the resolved address of every connection.
	DenyPrivate bool
	UserAgent   string // "inboxd" when empty
	Clock       Clock  // the real clock when nil
	// Jitter returns a number in [0, 1) (safe for concurrent use); the
	// scheduled delay is scaled by 0.9 + 0.2×Jitter(). math/rand when nil.
	Jitter func() float64
	Logger *slog.Logger
	// Metrics, when set, counts attempts and their latency.
	Metrics *Metrics
}

// Worker drains the durable webhook delivery queue.
type Worker struct {
	db     *store.DB
	cfg    WorkerConfig
	client *http.Client
	beat   atomic.Int64 // wall-clock UnixNano of the loop's last turn
}

// HeartbeatEvery is how often, at least, Run's loop turns when it has
// nothing to do; readiness (/readyz) holds a worker silent for much
// longer to be stuck.
const HeartbeatEvery = 30 * time.Second

// Heartbeat is when the worker's loop last turned (wall clock, whatever
// Clock says). A new worker counts as having just run.
func (w *Worker) Heartbeat() time.Time { return time.Unix(0, w.beat.Load()) }

func (w *Worker) pulse() { w.beat.Store(time.Now().UnixNano()) }

// NewWorker returns the worker; start it with Run.
func NewWorker(db *store.DB, cfg WorkerConfig) *Worker {
	if len(cfg.RetrySchedule) == 0 {
		cfg.RetrySchedule = DefaultRetrySchedule
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 32
	}
	if cfg.PerEndpoint <= 0 {
		cfg.PerEndpoint = PerEndpoint
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = Timeout
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "inboxd"
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	if cfg.DenyPrivate {
		dialer.Control = denyPrivateControl
	}
	transport := &http.Transport{
		// No proxy: the connect-time address check must see the target.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          cfg.Concurrency * 2,
		MaxIdleConnsPerHost:   cfg.PerEndpoint,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	client := &http.Client{
		Transport: transport,
		Timeout:   cfg.Timeout,
		// Redirects are not followed (SPEC §9): a 3xx is an answer, and
		// not a 2xx.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	w := &Worker{db: db, cfg: cfg, client: client}
	w.pulse()
	return w
}

// Run delivers due webhooks until ctx is done. It wakes when a commit may
// have queued something, when an attempt finishes and frees a slot, and
// when the next retry is due. Each attempt runs in its own goroutine, at
// most Concurrency in all and PerEndpoint per endpoint, so a slow endpoint
// holds only its own slots. When ctx is done Run stops claiming, lets the
// attempts in flight finish for up to ShutdownGrace, cancels the rest and
// returns once every attempt is recorded; what was not attempted stays
// queued in the database.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.db.ReleaseWebhookDeliveryClaims(ctx); err != nil {
		return err
	}
	// Outcomes are recorded by one goroutine in batches: a burst of
	// attempts costs one commit, not one each.
	results := make(chan store.WebhookDeliveryResult, w.cfg.Concurrency)
	recorded := make(chan struct{})
	go func() { defer close(recorded); w.record(results) }()
	busy := map[string]int{} // in flight by endpoint
	inFlight := 0
	done := make(chan string, w.cfg.Concurrency) // endpoint ids of finished attempts
	attemptCtx, cancelAttempts := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelAttempts()
	var wg sync.WaitGroup
	finished := func(endpoint string) {
		if busy[endpoint]--; busy[endpoint] <= 0 {
			delete(busy, endpoint)
		}
		inFlight--
	}

	tick := time.NewTicker(HeartbeatEvery)
	defer tick.Stop()
	for {
		w.pulse()
		changed := w.db.WebhooksChanged()
		var alarm <-chan time.Time
		if free := w.cfg.Concurrency - inFlight; free > 0 {
			now := w.cfg.Clock.Now()
			next, ok, err := w.db.NextWebhookDeliveryAt(ctx, w.cfg.PerEndpoint, busy)
			switch {
			case err != nil:
				if ctx.Err() == nil {
					w.cfg.Logger.Error("webhook: next delivery", "err", err)
				}
				alarm = w.cfg.Clock.At(now.Add(5 * time.Second)) // back off on database trouble
			case ok && !next.After(now):
				// Claim only what is due: claiming is a write, and every
				// commit would wake us again.
				claims, err := w.db.ClaimWebhookDeliveries(ctx, free, w.cfg.PerEndpoint, busy, w.cfg.Lease)
				if err != nil {
					if ctx.Err() == nil {
						w.cfg.Logger.Error("webhook: claim deliveries", "err", err)
					}
					alarm = w.cfg.Clock.At(now.Add(5 * time.Second))
					break
				}
				for _, c := range claims {
					// A delivery retried by hand while an attempt of it is
					// in flight is sent twice: at least once, as always.
					busy[c.EndpointID]++
					inFlight++
					wg.Go(func() {
						results <- w.attempt(attemptCtx, c)
						done <- c.EndpointID
					})
				}
				if len(claims) > 0 {
					continue // there may be more
				}
				// Due but not claimable (changed meanwhile, or clocks that
				// disagree): look again on the next commit or shortly,
				// rather than spin.
				changed = w.db.WebhooksChanged()
				alarm = w.cfg.Clock.At(now.Add(time.Second))
			case ok:
				alarm = w.cfg.Clock.At(next)
			}
		}
		select {
		case <-ctx.Done():
			err := w.shutdown(&wg, cancelAttempts)
			close(results)
			<-recorded
			return err
		case d := <-done:
			finished(d)
		case <-changed:
		case <-alarm:
		case <-tick.C:
		}
		// Collect every other finished attempt before claiming again.
		for drained := false; !drained; {
			select {
			case d := <-done:
				finished(d)
			default:
				drained = true
			}
		}
	}
}

// shutdown waits for the attempts in flight, up to ShutdownGrace, then
// cancels them and waits for them to be recorded.
func (w *Worker) shutdown(wg *sync.WaitGroup, cancelAttempts context.CancelFunc) error {
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	t := time.NewTimer(w.cfg.ShutdownGrace)
	defer t.Stop()
	select {
	case <-all:
	case <-t.C:
		w.cfg.Logger.Warn("webhook: cancelling attempts still in flight at shutdown")
		cancelAttempts()
		<-all
	}
	return nil
}

// attempt sends one delivery and returns its result.
func (w *Worker) attempt(ctx context.Context, c store.WebhookDeliveryClaim) store.WebhookDeliveryResult {
	at := w.cfg.Clock.Now()
	start := time.Now()
	code, body, retryAfter, err := w.post(ctx, c, at)
	a := store.WebhookAttempt{At: at, StatusCode: code, Duration: time.Since(start), ResponseExcerpt: body}
	if err != nil {
		a.Error = err.Error()
	}
	o := w.decide(c, a, w.cfg.Clock.Now(), retryAfter, err)
	outcome := "retry"
	switch o.Status {
	case store.WebhookDelivered:
		outcome = "delivered"
	case store.WebhookFailed:
		outcome = "failed"
	}
	w.cfg.Metrics.observe(code, outcome, a.Duration.Seconds())
	return o
}

// record stores results until the channel closes, taking everything that
// waits in one transaction. Outcomes are recorded even during shutdown:
// the attempts happened. On failure the leases set at claim time make the
// deliveries due again: at least once.
func (w *Worker) record(results <-chan store.WebhookDeliveryResult) {
	for o := range results {
		batch := []store.WebhookDeliveryResult{o}
		for more := true; more && len(batch) < 256; {
			select {
			case o, ok := <-results:
				if !ok {
					more = false
					break
				}
				batch = append(batch, o)
			default:
				more = false
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := w.db.RecordWebhookDeliveries(ctx, batch); err != nil {
			w.cfg.Logger.Error("webhook: record attempts", "attempts", len(batch), "err", err)
		}
		cancel()
	}
}

// decide turns an attempt that ended at ended into the delivery's next
// state (SPEC §9). The delay between attempts counts from the end of the
// one that failed: an endpoint that timed out after 15 s gets its 5 s.
func (w *Worker) decide(c store.WebhookDeliveryClaim, a store.WebhookAttempt, ended time.Time, retryAfter time.Duration, err error) store.WebhookDeliveryResult {
	o := store.WebhookDeliveryResult{EndpointID: c.EndpointID, DeliveryID: c.DeliveryID, Attempt: a}
	switch {
	case err == nil && a.StatusCode/100 == 2:
		o.Status = store.WebhookDelivered
		return o
	case err == nil && a.StatusCode == http.StatusGone:
		// The receiver asked to stop. The delivery stays pending, due at
		// once should the endpoint be enabled again.
		o.Status, o.NextAttempt = store.WebhookPending, a.At
		o.DisableReason, o.URL = "The endpoint answered 410 Gone.", c.URL
		return o
	}
	s := w.cfg.RetrySchedule
	if c.Attempt > len(s) {
		o.Status = store.WebhookFailed
		return o
	}
	delay := s[c.Attempt-1]
	delay += time.Duration((w.cfg.Jitter()*0.2 - 0.1) * float64(delay))
	if a.StatusCode == http.StatusTooManyRequests || a.StatusCode == http.StatusServiceUnavailable {
		delay = max(delay, min(retryAfter, MaxRetryAfter))
	}
	o.Status, o.NextAttempt = store.WebhookPending, ended.Add(delay)
	return o
}

// post sends the stored bytes, signed, and reads at most the excerpt of
// the answer.
func (w *Worker) post(ctx context.Context, c store.WebhookDeliveryClaim, at time.Time) (code int, excerpt string, retryAfter time.Duration, err error) {
	sig, err := SignatureHeader(c.Secrets, c.EventID, at, c.Body)
	if err != nil {
		return 0, "", 0, fmt.Errorf("sign: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(c.Body))
	if err != nil {
		return 0, "", 0, err
	}
	req.Header.Set(HeaderID, c.EventID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.cfg.UserAgent)
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	// The status decides (SPEC §9: a 2xx within the timeout is success);
	// a body cut short by the timeout only shortens the excerpt. Reading
	// a 2xx as a failure would deliver to a receiver that had taken it.
	b, err := io.ReadAll(io.LimitReader(resp.Body, store.MaxResponseExcerpt))
	if err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
	}
	return resp.StatusCode, string(b), parseRetryAfter(resp.Header.Get("Retry-After"), at), nil
}

// parseRetryAfter reads Retry-After (RFC 9110 §10.2.3): delay-seconds or
// an HTTP-date, relative to now. Anything else is zero.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(min(n, int64(MaxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), MaxRetryAfter)
	}
	return 0
}
