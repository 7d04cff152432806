package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/inboxd/inboxd/corpus"
	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
)

// fakeClock drives the worker's schedule: At channels fire when the test
// advances it past their time.
type fakeClock struct {
	mu      sync.Mutex
	t       time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock {
	// Near the real time: Standard Webhooks libraries check the timestamp
	// against their own clock (5 minutes' tolerance).
	return &fakeClock{t: time.Now().UTC().Truncate(time.Millisecond)}
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.t) {
		ch <- c.t
		return ch
	}
	c.waiters = append(c.waiters, waiter{t, ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.t) {
			kept = append(kept, w)
			continue
		}
		w.c <- c.t
	}
	c.waiters = kept
}

type env struct {
	t     *testing.T
	db    *store.DB
	boot  store.Bootstrapped
	clock *fakeClock
	n     int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	clk := newFakeClock()
	db, err := store.Open(ctx, store.Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	boot, _, err := db.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); db.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-done
		db.Close()
	})
	return &env{t: t, db: db, boot: boot, clock: clk}
}

// start runs a worker until the test ends.
func (e *env) start(cfg WorkerConfig) {
	e.t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = e.clock
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func() float64 { return 0.5 } // no jitter: exact schedule
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := NewWorker(e.db, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("Run: %v", err)
		}
	})
}

// endpoint registers u, with a new secret when secret is "".
func (e *env) endpoint(u, secret string) store.WebhookEndpoint {
	e.t.Helper()
	if secret == "" {
		secret = NewSecret()
	}
	ep, _, err := e.db.CreateWebhookEndpoint(context.Background(), e.boot.ProjectID, store.NewWebhookEndpoint{URL: u, Secret: secret})
	if err != nil {
		e.t.Fatal(err)
	}
	return ep
}

// receive ingests a message through the real ingest path, which appends
// message.received and queues its webhook deliveries; it returns the
// event's id.
func (e *env) receive() string {
	e.t.Helper()
	e.n++
	raw := fmt.Sprintf("From: a@example.com\r\nTo: inbox@localhost\r\nMessage-ID: <hook%d@example.com>\r\nSubject: n%d\r\n\r\nbody\r\n", e.n, e.n)
	ctx := context.Background()
	before, err := e.db.LastEventSeq(ctx, e.boot.ProjectID)
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.db.Ingest(ctx, &store.Incoming{
		Raw: []byte(raw), Trace: []byte("Received: test\r\n"), Parsed: message.Parse([]byte(raw)),
		Envelope: store.Envelope{MailFrom: "a@example.com", RcptTo: []string{"inbox@localhost"}, RemoteIP: "127.0.0.1", Helo: "test"},
		Targets:  []store.Target{{InboxID: e.boot.Inbox.ID}}, ReceivedAt: e.clock.Now(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	evs, err := e.db.Events(ctx, store.EventFilter{ProjectID: e.boot.ProjectID, After: before}, 10)
	if err != nil || len(evs) != 1 || evs[0].Type != store.EventMessageReceived {
		e.t.Fatalf("ingest produced %d events (%v), want one message.received", len(evs), err)
	}
	var env struct{ ID string }
	json.Unmarshal(evs[0].Body, &env)
	return env.ID
}

// waitFor waits, woken by commits, until cond holds. The timeout only
// bounds a failing test.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		changed := e.db.Changed()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			e.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (e *env) deliveries(ep string) []store.WebhookDelivery {
	e.t.Helper()
	ds, err := e.db.WebhookDeliveries(context.Background(), e.boot.ProjectID, ep, nil, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return ds
}

func (e *env) delivery(ep, id string) store.WebhookDelivery {
	e.t.Helper()
	d, err := e.db.GetWebhookDelivery(context.Background(), e.boot.ProjectID, ep, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) statuses(ep string) map[string]int {
	m := map[string]int{}
	for _, d := range e.deliveries(ep) {
		m[d.Status]++
	}
	return m
}

// request is what the receiver saw.
type request struct {
	Header http.Header
	Body   []byte
}

// receiver is a real HTTP server on loopback that can go down and come
// back on the same address. answer decides each response.
type receiver struct {
	t      *testing.T
	addr   string
	got    chan request
	mu     sync.Mutex
	answer func(request) (int, http.Header)
	srv    *http.Server
}

func newReceiver(t *testing.T, answer func(request) (int, http.Header)) *receiver {
	r := &receiver{t: t, got: make(chan request, 1000), answer: answer}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(r.down)
	return r
}

func (r *receiver) URL() string { return "http://" + r.addr + "/hook" }

func (r *receiver) serve(ln net.Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		rq := request{Header: req.Header.Clone(), Body: body}
		r.mu.Lock()
		answer := r.answer
		r.mu.Unlock()
		status, h := http.StatusOK, http.Header(nil)
		if answer != nil {
			status, h = answer(rq)
		}
		r.got <- rq
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, "status %d", status)
	})}
	go r.srv.Serve(ln)
}

func (r *receiver) setAnswer(f func(request) (int, http.Header)) {
	r.mu.Lock()
	r.answer = f
	r.mu.Unlock()
}

// down closes the listener and every connection: connects are refused.
func (r *receiver) down() {
	r.mu.Lock()
	srv := r.srv
	r.mu.Unlock()
	srv.Close()
}

// up listens again on the same address.
func (r *receiver) up() {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.serve(ln)
}

func (r *receiver) next(t *testing.T) request {
	t.Helper()
	select {
	case rq := <-r.got:
		return rq
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a webhook request")
		return request{}
	}
}

func status(code int) func(request) (int, http.Header) {
	return func(request) (int, http.Header) { return code, nil }
}

func eventID(t *testing.T, body []byte) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal(body, &v); err != nil || v.ID == "" {
		t.Fatalf("body is not an event envelope: %s", body)
	}
	return v.ID
}

func verify(t *testing.T, secret string, rq request) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh.Verify(rq.Body, rq.Header)
}

func TestSignMatchesLibrary(t *testing.T) {
	for _, secret := range []string{NewSecret(), "whsec_" + base64.StdEncoding.EncodeToString([]byte("a 24 byte key, exactly!!")),
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		if err := ValidateSecret(secret); err != nil {
			t.Fatalf("%q: %v", secret, err)
		}
		wh, _ := standardwebhooks.NewWebhook(secret)
		ts := time.Unix(1_700_000_000, 0)
		body := []byte(`{"id":"evt_1","type":"message.received"}`)
		got, err := Sign(secret, "evt_1", ts, body)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := wh.Sign("evt_1", ts, body)
		if got != want {
			t.Errorf("Sign = %q, library %q", got, want)
		}
	}
	// The example of the Standard Webhooks specification.
	got, _ := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0),
		[]byte(`{"test": 2432232314}`))
	if got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Errorf("spec example: %q", got)
	}
	s := NewSecret()
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if !strings.HasPrefix(s, "whsec_") || len(key) != 32 || s == NewSecret() {
		t.Errorf("NewSecret = %q", s)
	}
	for _, bad := range []string{"", "secret", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_%%%", "whsec_!!!",
		"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 16)), "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23)),
		"whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65))} {
		if err := ValidateSecret(bad); !errors.Is(err, ErrBadSecret) {
			t.Errorf("ValidateSecret(%q) = %v, want ErrBadSecret", bad, err)
		}
	}
	for _, n := range []int{24, 64} {
		if s := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, n)); ValidateSecret(s) != nil {
			t.Errorf("ValidateSecret(%q) refused %d bytes", s, n)
		}
	}
}

// TestDeliveryVerifiesWithLibrary: the request carries the exact stored
// envelope, the Standard Webhooks headers, and a signature the independent
// library verifies — during a rotation with either secret.
func TestDeliveryVerifiesWithLibrary(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, nil)
	oldSecret := NewSecret()
	ep := e.endpoint(rcv.URL(), oldSecret)
	e.start(WorkerConfig{UserAgent: "inboxd/test"})

	id := e.receive()
	rq := rcv.next(t)
	if err := verify(t, oldSecret, rq); err != nil {
		t.Errorf("library verification: %v", err)
	}
	evs, _ := e.db.Events(context.Background(), store.EventFilter{ProjectID: e.boot.ProjectID}, 10)
	if !bytes.Equal(rq.Body, evs[len(evs)-1].Body) {
		t.Errorf("body %s differs from the stored event %s", rq.Body, evs[len(evs)-1].Body)
	}
	for k, want := range map[string]string{"Webhook-Id": id, "Webhook-Timestamp": strconv.FormatInt(e.clock.Now().Unix(), 10),
		"Content-Type": "application/json", "User-Agent": "inboxd/test"} {
		if got := rq.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := strings.Fields(rq.Header.Get("Webhook-Signature")); len(got) != 1 {
		t.Errorf("one secret, signatures %q", got)
	}
	e.waitFor("delivered", func() bool { return e.statuses(ep.ID)[store.WebhookDelivered] == 1 })

	// Rotation: both secrets sign for 24 hours.
	_, newSecret, err := e.db.RotateWebhookSecret(context.Background(), e.boot.ProjectID, ep.ID, NewSecret())
	if err != nil {
		t.Fatal(err)
	}
	e.receive()
	rq = rcv.next(t)
	for _, s := range []string{oldSecret, newSecret} {
		if err := verify(t, s, rq); err != nil {
			t.Errorf("during rotation, %s…: %v", s[:10], err)
		}
	}
	if got := strings.Fields(rq.Header.Get("Webhook-Signature")); len(got) != 2 {
		t.Errorf("during rotation, signatures %q, want two", got)
	}
	if err := verify(t, NewSecret(), rq); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("a stranger's secret verifies: %v", err)
	}
	e.waitFor("delivered", func() bool { return e.statuses(ep.ID)[store.WebhookDelivered] == 2 })
	writeNodeCase(t, []nodeCase{{oldSecret, rq}, {newSecret, rq}})
}

// TestOutage: the receiver answers 500, then is down, then comes back.
// Every event arrives; the duplicates carry the same id and body.
func TestOutage(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, status(http.StatusInternalServerError))
	secret := NewSecret()
	ep := e.endpoint(rcv.URL(), secret)
	schedule := []time.Duration{5 * time.Second, 30 * time.Second, time.Minute, time.Minute}
	e.start(WorkerConfig{RetrySchedule: schedule})

	const n = 6
	var ids []string
	for range n {
		ids = append(ids, e.receive())
	}
	var seen []request
	take := func(k int) {
		for range k {
			seen = append(seen, rcv.next(t))
		}
	}
	// First attempts: all answered 500.
	take(n)
	e.waitFor("first attempts recorded", func() bool { return e.attemptCount(ep.ID) == n })
	// Down: the second attempts (after 5 s) find nothing listening.
	rcv.down()
	e.clock.Advance(5 * time.Second)
	e.waitFor("second attempts recorded", func() bool { return e.attemptCount(ep.ID) == 2*n })
	for _, d := range e.deliveries(ep.ID) {
		d = e.delivery(ep.ID, d.ID)
		if a := d.Attempts[1]; a.StatusCode != 0 || a.Error == "" || d.Status != store.WebhookPending {
			t.Errorf("attempt while down: %+v, status %s", a, d.Status)
		}
		if want := d.Attempts[1].At.Add(30 * time.Second); !d.NextAttemptAt.Equal(want) {
			t.Errorf("next attempt %v, want %v (the schedule's second delay)", d.NextAttemptAt, want)
		}
	}
	// Back, answering 200.
	rcv.setAnswer(status(http.StatusOK))
	rcv.up()
	e.clock.Advance(30 * time.Second)
	take(n)
	e.waitFor("all delivered", func() bool { return e.statuses(ep.ID)[store.WebhookDelivered] == n })

	bodies := map[string][]byte{}
	for _, rq := range seen {
		id := rq.Header.Get("webhook-id")
		if id != eventID(t, rq.Body) {
			t.Errorf("webhook-id %s carries event %s", id, eventID(t, rq.Body))
		}
		if prev, ok := bodies[id]; ok && !bytes.Equal(prev, rq.Body) {
			t.Errorf("duplicate of %s with a different body", id)
		}
		bodies[id] = rq.Body
		if err := verify(t, secret, rq); err != nil {
			t.Errorf("verify %s: %v", id, err)
		}
	}
	for _, id := range ids {
		if _, ok := bodies[id]; !ok {
			t.Errorf("event %s never arrived", id)
		}
	}
	select {
	case rq := <-rcv.got:
		t.Errorf("an extra request after delivery: %s", rq.Header.Get("webhook-id"))
	default:
	}
}

func (e *env) attemptCount(ep string) int {
	n := 0
	for _, d := range e.deliveries(ep) {
		n += len(e.delivery(ep, d.ID).Attempts)
	}
	return n
}

func TestScheduleExhaustedFails(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, status(http.StatusFound)) // a redirect is not followed, and not a success
	ep := e.endpoint(rcv.URL(), "")
	e.start(WorkerConfig{RetrySchedule: []time.Duration{time.Second}})
	e.receive()
	rcv.next(t)
	e.waitFor("first attempt", func() bool { return e.attemptCount(ep.ID) == 1 })
	e.clock.Advance(time.Second)
	rcv.next(t)
	e.waitFor("failed", func() bool { return e.statuses(ep.ID)[store.WebhookFailed] == 1 })
	d := e.delivery(ep.ID, e.deliveries(ep.ID)[0].ID)
	if d.AttemptCount != 2 || d.NextAttemptAt != nil || d.Attempts[0].StatusCode != 302 || d.Attempts[0].ResponseExcerpt != "status 302" {
		t.Errorf("failed delivery %+v", d)
	}
	// A manual retry gives it one more attempt.
	rcv.setAnswer(status(http.StatusNoContent))
	if _, err := e.db.RetryWebhookDelivery(context.Background(), e.boot.ProjectID, ep.ID, d.ID); err != nil {
		t.Fatal(err)
	}
	rcv.next(t)
	e.waitFor("delivered after a manual retry", func() bool { return e.statuses(ep.ID)[store.WebhookDelivered] == 1 })
}

func TestGoneDisablesEndpoint(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, status(http.StatusGone))
	ep := e.endpoint(rcv.URL(), "")
	e.start(WorkerConfig{})
	e.receive()
	rcv.next(t)
	e.waitFor("endpoint disabled", func() bool {
		got, err := e.db.GetWebhookEndpoint(context.Background(), e.boot.ProjectID, ep.ID)
		return err == nil && !got.Enabled
	})
	got, _ := e.db.GetWebhookEndpoint(context.Background(), e.boot.ProjectID, ep.ID)
	if !strings.Contains(got.DisabledReason, "410") {
		t.Errorf("disabled_reason %q", got.DisabledReason)
	}
	// Later events queue nothing for it, and nothing is retried.
	e.receive()
	e.clock.Advance(time.Hour)
	if n := len(e.deliveries(ep.ID)); n != 1 {
		t.Errorf("%d deliveries after the 410, want 1", n)
	}
	// Enabling it again resumes the pending delivery.
	rcv.setAnswer(status(http.StatusOK))
	on := true
	if _, err := e.db.UpdateWebhookEndpoint(context.Background(), e.boot.ProjectID, ep.ID, store.WebhookEndpointPatch{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	rcv.next(t)
	e.waitFor("delivered after re-enabling", func() bool { return e.statuses(ep.ID)[store.WebhookDelivered] == 1 })
}

// A 410 that arrives from the URL an endpoint was moved away from while
// the request was in flight does not disable it at its new URL; the
// delivery goes there.
func TestGoneFromAnOldURLDoesNotDisable(t *testing.T) {
	e := newEnv(t)
	answering, answer := make(chan struct{}), make(chan struct{})
	old := newReceiver(t, func(request) (int, http.Header) {
		close(answering)
		<-answer
		return http.StatusGone, nil
	})
	moved := newReceiver(t, status(http.StatusOK))
	ep := e.endpoint(old.URL(), "")
	e.start(WorkerConfig{})
	e.receive()
	<-answering
	u := moved.URL()
	if _, err := e.db.UpdateWebhookEndpoint(context.Background(), e.boot.ProjectID, ep.ID, store.WebhookEndpointPatch{URL: &u}); err != nil {
		t.Fatal(err)
	}
	close(answer)
	old.next(t)
	moved.next(t)
	e.waitFor("delivered at the new URL", func() bool { return e.statuses(ep.ID)[store.WebhookDelivered] == 1 })
	got, err := e.db.GetWebhookEndpoint(context.Background(), e.boot.ProjectID, ep.ID)
	if err != nil || !got.Enabled || got.DisabledReason != "" {
		t.Errorf("after a 410 from the old URL: %+v %v", got, err)
	}
}

func TestRetryAfter(t *testing.T) {
	e := newEnv(t)
	var answers = make(chan func(request) (int, http.Header), 10)
	rcv := newReceiver(t, func(rq request) (int, http.Header) { return (<-answers)(rq) })
	ep := e.endpoint(rcv.URL(), "")
	e.start(WorkerConfig{RetrySchedule: []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second, 5 * time.Minute}})
	e.receive()
	lastNext := func(want int) (store.WebhookAttempt, time.Time) {
		var d store.WebhookDelivery
		e.waitFor(fmt.Sprintf("attempt %d", want), func() bool {
			d = e.delivery(ep.ID, e.deliveries(ep.ID)[0].ID)
			return len(d.Attempts) == want
		})
		return d.Attempts[want-1], *d.NextAttemptAt
	}
	// 429 with Retry-After seconds longer than the schedule: honoured.
	answers <- func(request) (int, http.Header) { return 429, http.Header{"Retry-After": {"120"}} }
	rcv.next(t)
	a, next := lastNext(1)
	if next.Sub(a.At) != 120*time.Second {
		t.Errorf("after 429 Retry-After 120: next in %v", next.Sub(a.At))
	}
	// 503 with an HTTP date two hours ahead: capped at an hour.
	e.clock.Advance(120 * time.Second)
	answers <- func(request) (int, http.Header) {
		return 503, http.Header{"Retry-After": {e.clock.Now().Add(2 * time.Hour).Format(http.TimeFormat)}}
	}
	rcv.next(t)
	a, next = lastNext(2)
	if next.Sub(a.At) != time.Hour {
		t.Errorf("after 503 Retry-After in 2 h: next in %v, want 1h", next.Sub(a.At))
	}
	// 429 with a Retry-After shorter than the schedule: the schedule wins.
	e.clock.Advance(time.Hour)
	answers <- func(request) (int, http.Header) { return 429, http.Header{"Retry-After": {"1"}} }
	rcv.next(t)
	a, next = lastNext(3)
	if next.Sub(a.At) != 5*time.Second {
		t.Errorf("after 429 Retry-After 1: next in %v, want the schedule's 5s", next.Sub(a.At))
	}
	// Retry-After on a 500 is not a reason to wait longer.
	e.clock.Advance(5 * time.Second)
	answers <- func(request) (int, http.Header) { return 500, http.Header{"Retry-After": {"3000"}} }
	rcv.next(t)
	a, next = lastNext(4)
	if next.Sub(a.At) != 5*time.Minute {
		t.Errorf("after 500 Retry-After 3000: next in %v, want 5m", next.Sub(a.At))
	}
}

// The delay between attempts counts from the end of the failed one: an
// endpoint that takes 15 s to fail is retried 5 s after that, not at once.
func TestRetryDelayCountsFromTheAttemptsEnd(t *testing.T) {
	e := newEnv(t)
	rcv := newReceiver(t, func(request) (int, http.Header) {
		e.clock.Advance(15 * time.Second) // the attempt takes 15 s of the clock
		return 500, nil
	})
	ep := e.endpoint(rcv.URL(), "")
	e.start(WorkerConfig{RetrySchedule: []time.Duration{5 * time.Second}})
	e.receive()
	rcv.next(t)
	var d store.WebhookDelivery
	e.waitFor("attempt recorded", func() bool {
		d = e.delivery(ep.ID, e.deliveries(ep.ID)[0].ID)
		return len(d.Attempts) == 1
	})
	if got := d.NextAttemptAt.Sub(d.Attempts[0].At); got != 20*time.Second {
		t.Errorf("next attempt %v after the attempt began, want 20s (15 s of attempt, then the 5 s delay)", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"30", 30 * time.Second}, {" 30 ", 30 * time.Second}, {"7200", time.Hour}, {"-5", 0}, {"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(3 * time.Hour).Format(time.RFC850), time.Hour},
	} {
		if got := parseRetryAfter(c.in, now); got != c.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestJitter(t *testing.T) {
	w := NewWorker(nil, WorkerConfig{RetrySchedule: []time.Duration{10 * time.Second}})
	c := store.WebhookDeliveryClaim{Attempt: 1}
	at := time.Now()
	for _, j := range []struct {
		r    float64
		want time.Duration
	}{{0, 9 * time.Second}, {0.5, 10 * time.Second}, {0.9999999, 11 * time.Second}} {
		w.cfg.Jitter = func() float64 { return j.r }
		o := w.decide(c, store.WebhookAttempt{At: at, StatusCode: 500}, at, 0, nil)
		if d := o.NextAttempt.Sub(at); d.Round(time.Millisecond) != j.want {
			t.Errorf("jitter %v: delay %v, want %v", j.r, d, j.want)
		}
	}
}

// TestSlowEndpointDoesNotDelayFast: an endpoint whose handler blocks holds
// at most 4 requests; a fast endpoint receives every event meanwhile.
func TestSlowEndpointDoesNotDelayFast(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	var mu sync.Mutex
	inSlow, maxSlow := 0, 0
	arrived := make(chan struct{}, 64)
	slow := newReceiver(t, func(request) (int, http.Header) {
		mu.Lock()
		inSlow++
		maxSlow = max(maxSlow, inSlow)
		mu.Unlock()
		arrived <- struct{}{}
		<-release
		mu.Lock()
		inSlow--
		mu.Unlock()
		return 200, nil
	})
	fast := newReceiver(t, nil)
	slowEP := e.endpoint(slow.URL(), "")
	fastEP := e.endpoint(fast.URL(), "")
	e.start(WorkerConfig{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	const n = 20
	for range n {
		e.receive()
	}
	for range n {
		fast.next(t) // all 20 arrive while the slow endpoint holds its 4
	}
	e.waitFor("fast delivered", func() bool { return e.statuses(fastEP.ID)[store.WebhookDelivered] == n })
	// The slow endpoint's fourth request may still be on its way when the
	// fast one is done: wait for its arrival, not for a moment.
	for i := range 4 {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("the slow endpoint got %d requests, want 4", i)
		}
	}
	mu.Lock()
	if inSlow != 4 {
		t.Errorf("slow endpoint has %d requests in flight, want 4", inSlow)
	}
	mu.Unlock()
	if got := e.statuses(slowEP.ID)[store.WebhookDelivered]; got != 0 {
		t.Errorf("slow endpoint: %d delivered while blocked", got)
	}
	close(release)
	e.waitFor("slow delivered", func() bool { return e.statuses(slowEP.ID)[store.WebhookDelivered] == n })
	mu.Lock()
	defer mu.Unlock()
	if maxSlow > 4 {
		t.Errorf("slow endpoint had %d requests in flight, limit 4", maxSlow)
	}
}

// A receiver that answers 200 at once and then holds its body open past
// the timeout has taken the event: the status decides, and the event is
// not delivered to it again.
func TestSuccessWithASlowBodyIsDelivered(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "accepted")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the rest of the body never comes
	}))
	defer srv.Close()
	ep := e.endpoint(srv.URL, "")
	e.start(WorkerConfig{Timeout: 200 * time.Millisecond})
	e.receive()
	e.waitFor("delivered", func() bool { return e.statuses(ep.ID)[store.WebhookDelivered] == 1 })
	d := e.delivery(ep.ID, e.deliveries(ep.ID)[0].ID)
	if d.AttemptCount != 1 || len(d.Attempts) != 1 || d.Attempts[0].StatusCode != 200 || d.Attempts[0].ResponseExcerpt != "accepted" {
		t.Fatalf("delivery %+v", d)
	}
}

// TestShutdownWaitsForInFlight: an attempt in flight when Run's context
// ends is finished (within the grace period) and recorded.
func TestShutdownWaitsForInFlight(t *testing.T) {
	for _, c := range []struct {
		name   string
		grace  time.Duration
		status string
	}{{"finishes", time.Minute, store.WebhookDelivered}, {"cancelled after the grace", time.Millisecond, store.WebhookPending}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			entered, release := make(chan struct{}), make(chan struct{})
			rcv := newReceiver(t, func(request) (int, http.Header) {
				close(entered)
				<-release
				return 200, nil
			})
			defer close(release)
			ep := e.endpoint(rcv.URL(), "")
			w := NewWorker(e.db, WorkerConfig{Clock: e.clock, ShutdownGrace: c.grace, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			e.receive()
			<-entered
			cancel()
			if c.status == store.WebhookDelivered {
				release <- struct{}{} // only a Run still waiting lets the request finish…
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			// …and Run returns only after the attempt is recorded.
			d := e.delivery(ep.ID, e.deliveries(ep.ID)[0].ID)
			if d.Status != c.status || len(d.Attempts) != 1 {
				t.Errorf("after shutdown: status %s, %d attempts; want %s, 1", d.Status, len(d.Attempts), c.status)
			}
		})
	}
}

func TestDenyPrivate(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:8080/x", "http://localhost/x", "https://10.1.2.3/", "http://[::1]/",
		"http://169.254.169.254/latest", "http://0.0.0.0/", "http://192.168.1.1/", "http://[fe80::1]/", "http://[::ffff:127.0.0.1]/"} {
		pu, _ := url.Parse(u)
		if err := CheckURL(ctx, pu); err == nil {
			t.Errorf("CheckURL(%s) allowed", u)
		}
	}
	for _, u := range []string{"https://93.184.215.14/hook", "http://[2606:4700::1111]/"} {
		pu, _ := url.Parse(u)
		if err := CheckURL(ctx, pu); err != nil {
			t.Errorf("CheckURL(%s): %v", u, err)
		}
	}
	if !Denied(netip.MustParseAddr("::ffff:10.0.0.1")) || Denied(netip.MustParseAddr("8.8.8.8")) {
		t.Error("Denied misclassifies")
	}

	// At connect time: the resolved address is checked, nothing is sent.
	e := newEnv(t)
	rcv := newReceiver(t, nil)
	u := strings.Replace(rcv.URL(), "127.0.0.1", "localhost", 1) // a name, resolved at dial time
	ep := e.endpoint(u, "")
	e.start(WorkerConfig{DenyPrivate: true})
	e.receive()
	e.waitFor("refused attempt", func() bool { return e.attemptCount(ep.ID) == 1 })
	d := e.delivery(ep.ID, e.deliveries(ep.ID)[0].ID)
	if a := d.Attempts[0]; !strings.Contains(a.Error, "--webhook-deny-private") || a.StatusCode != 0 || d.Status != store.WebhookPending {
		t.Errorf("attempt %+v, status %s", a, d.Status)
	}
	select {
	case <-rcv.got:
		t.Error("the private receiver got a request")
	default:
	}
}

// nodeCase is one request for testdata/verify.mjs to verify.
type nodeCase struct {
	Secret  string
	Request request
}

// writeNodeCase runs the standardwebhooks npm package over requests when
// node and the package are installed (npm install --prefix
// webhook/testdata standardwebhooks).
func writeNodeCase(t *testing.T, cases []nodeCase) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Log("node not installed: skipping the npm standardwebhooks verification")
		return
	}
	if _, err := os.Stat(filepath.Join("testdata", "node_modules", "standardwebhooks")); err != nil {
		t.Log("standardwebhooks npm package not installed under webhook/testdata: skipping its verification")
		return
	}
	type jsCase struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    []byte            `json:"body_base64"`
	}
	var in []jsCase
	for _, c := range cases {
		h := map[string]string{}
		for _, k := range []string{HeaderID, HeaderTimestamp, HeaderSignature} {
			h[k] = c.Request.Header.Get(k)
		}
		in = append(in, jsCase{c.Secret, h, c.Request.Body})
	}
	b, _ := json.Marshal(in)
	cmd := exec.Command(node, filepath.Join("testdata", "verify.mjs"))
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm standardwebhooks verification failed: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != fmt.Sprintf("verified %d", len(cases)) {
		t.Fatalf("verify.mjs: %s", got)
	}
}

// TestNodeLibraryVerifies signs with rotation and hands the requests to
// the npm package; it is skipped only when node or the package is absent.
func TestNodeLibraryVerifies(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		corpus.SkipOrFail(t, "node not installed")
	}
	if _, err := os.Stat(filepath.Join("testdata", "node_modules", "standardwebhooks")); err != nil {
		corpus.SkipOrFail(t, "run: npm ci --prefix webhook/testdata")
	}
	oldS, newS := NewSecret(), NewSecret()
	body := []byte(`{"id":"evt_1","type":"message.received","data":{"subject":"é ✓"}}`)
	ts := time.Now()
	sig, err := SignatureHeader([]string{newS, oldS}, "evt_1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderID, "evt_1")
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	rq := request{Header: h, Body: body}
	writeNodeCase(t, []nodeCase{{oldS, rq}, {newS, rq}})
	// And a wrong secret must fail there too.
	node, _ := exec.LookPath("node")
	b, _ := json.Marshal([]map[string]any{{"secret": NewSecret(), "headers": map[string]string{
		HeaderID: "evt_1", HeaderTimestamp: h.Get(HeaderTimestamp), HeaderSignature: sig}, "body_base64": body}})
	cmd := exec.Command(node, filepath.Join("testdata", "verify.mjs"))
	cmd.Stdin = bytes.NewReader(b)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("verify.mjs accepted a wrong secret: %s", out)
	}
}
