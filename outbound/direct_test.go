package outbound

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	gosmtp "github.com/emersion/go-smtp"
	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/internal/dnstest"
	"github.com/inboxd/inboxd/smtp"
	"github.com/inboxd/inboxd/store"
)

// --outbound direct: each recipient domain's MX, found in DNS (a real
// DNS server on loopback), takes its recipients' copy over STARTTLS, with
// our EHLO name and a DKIM signature that verifies against the published
// key; a domain with no MX takes it at its own address; a domain that does
// not exist or has a null MX bounces; one whose MX does not answer defers.
func TestDirectDelivery(t *testing.T) {
	mx := startRelay(t)
	mx.open = true
	mx.rcptCode["nobody@bounce.test"] = &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	host, port, _ := net.SplitHostPort(mx.addr)
	ip := net.ParseIP(host)
	_, resolver := dnstest.Serve(t, dnstest.Zone{
		MX: map[string][]string{"example.test": {"mx-down.example.test", "mx1.example.test"}, "bounce.test": {"mx1.example.test"},
			"nullmx.test": {"."}, "down.test": {"mx-down.example.test"}},
		A: map[string]net.IP{"mx1.example.test": ip, "nomx.test": ip, "mx-down.example.test": net.ParseIP("127.0.0.2")},
	})
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	direct := smtp.NewDirect(smtp.DirectConfig{Hostname: "mx.inboxd.test", Port: port, Resolver: resolver, Timeout: 5 * time.Second,
		DKIM: map[string]smtp.DKIMKey{"localhost": {Selector: "sel1", Signer: key}}})
	e := newEnv(t, app.OutboundDirect, direct, "")

	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "alice@example.test"}, {Email: "carol@NoMX.test"}}, Subject: subject("direct"), Text: "hello"})
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
	if len(mx.got) != 2 {
		t.Fatalf("the exchanger got %d transactions, want one per domain: %+v", len(mx.got), mx.got)
	}
	for _, g := range mx.got {
		if !g.tls || g.helo != "mx.inboxd.test" || g.from != "inbox@localhost" || len(g.rcpts) != 1 {
			t.Errorf("transaction %+v", g)
		}
		vs, err := dkim.VerifyWithOptions(bytes.NewReader(g.raw), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
			if name != "sel1._domainkey.localhost" {
				t.Errorf("DKIM key looked up at %s", name)
			}
			return []string{"v=DKIM1; k=ed25519; p=" + base64.StdEncoding.EncodeToString(pub)}, nil
		}})
		if err != nil || len(vs) != 1 || vs[0].Err != nil || vs[0].Domain != "localhost" {
			t.Errorf("DKIM: %v %+v", err, vs)
		}
	}
	dels, _ := e.db.DeliveriesOf(context.Background(), []string{res.MessageID})
	for _, d := range dels[res.MessageID] {
		if d.Status != store.StatusSent {
			t.Errorf("delivery to %s: %s", d.Email, d.Status)
		}
	}

	for _, c := range []struct {
		rcpt, state string
		code        int // 0: none (no server answered)
		text        string
	}{
		{"nobody@bounce.test", store.StatusBounced, 550, "5.1.1 no such user"},
		{"erin@nullmx.test", store.StatusBounced, 556, "5.1.10 nullmx.test accepts no mail (null MX)"},
		{"frank@nowhere.test", store.StatusBounced, 550, "5.1.2 nowhere.test has no mail exchanger and no address"},
		{"gina@down.test", store.StatusDeferred, 0, "no mail exchanger of down.test answered"},
	} {
		res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: c.rcpt}}, Subject: subject(c.rcpt), Text: "hello"})
		e.waitState(t, e.boot.Inbox.ID, res.MessageID, c.state)
		dels, _ := e.db.DeliveriesOf(context.Background(), []string{res.MessageID})
		d := dels[res.MessageID][0]
		code, text := 0, ""
		if d.Code != nil {
			code = *d.Code
		}
		if d.Message != nil {
			text = *d.Message
		}
		if d.Status != c.state || code != c.code || !strings.HasPrefix(text, c.text) {
			t.Errorf("%s: %s %d %q, want %s %d %q", c.rcpt, d.Status, code, text, c.state, c.code, c.text)
		}
	}
}

// directTo is the direct transport over a DNS server on loopback that
// gives each domain of mx its exchanger's address; every exchanger
// listens on port.
func directTo(t *testing.T, port string, mx map[string]string) *smtp.Direct {
	t.Helper()
	zone := dnstest.Zone{MX: map[string][]string{}, A: map[string]net.IP{}}
	for dom, ip := range mx {
		zone.MX[dom] = []string{"mx." + dom}
		zone.A["mx."+dom] = net.ParseIP(ip)
	}
	_, resolver := dnstest.Serve(t, zone)
	// Timeouts far beyond the tests' own: only cancelling ends a wait.
	return smtp.NewDirect(smtp.DirectConfig{Port: port, Resolver: resolver, Timeout: 10 * time.Minute})
}

// A domain beyond ASCII is looked up by its A-label (münchen.test is
// xn--mnchen-3ya.test in DNS) and named by it in RCPT TO, so its mail
// needs no SMTPUTF8; a domain IDNA would refuse (an underscore) is looked
// up as it is.
func TestDirectInternationalDomain(t *testing.T) {
	mx := startRelay(t)
	mx.open = true
	_, port, _ := net.SplitHostPort(mx.addr)
	e := newEnv(t, app.OutboundDirect, directTo(t, port, map[string]string{"xn--mnchen-3ya.test": "127.0.0.1", "mail_host.test": "127.0.0.1"}), "")
	for _, to := range []string{"anna@münchen.test", "bob@mail_host.test"} {
		res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: to}}, Subject: subject("grüß dich"), Text: "hallo"})
		e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
	}
	mx.mu.Lock()
	defer mx.mu.Unlock()
	var rcpts []string
	for _, m := range mx.got {
		rcpts = append(rcpts, m.rcpts...)
	}
	if want := []string{"anna@xn--mnchen-3ya.test", "bob@mail_host.test"}; !slices.Equal(rcpts, want) {
		t.Fatalf("the exchanger got %v, want %v", rcpts, want)
	}
}

// slowAndFast is direct delivery, configured by cfg, to two domains:
// slow.test, whose exchanger holds each message until release, and
// fast.test, whose exchanger answers at once. Release before the test
// ends: the worker's stop waits for the message in flight.
func slowAndFast(t *testing.T, cfg WorkerConfig) (e *env, slow, fast *fakeRelay, held <-chan struct{}, release func()) {
	t.Helper()
	fast = startRelay(t)
	fast.open = true
	_, port, _ := net.SplitHostPort(fast.addr)
	slow = startRelayOn(t, net.JoinHostPort("127.0.0.2", port))
	slow.open = true
	held, release = slow.hold()
	cfg.Relay = directTo(t, port, map[string]string{"slow.test": "127.0.0.2", "fast.test": "127.0.0.1"})
	return newEnvConfig(t, app.OutboundDirect, cfg), slow, fast, held, release
}

func waitHeld(t *testing.T, held <-chan struct{}) {
	t.Helper()
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the exchanger never got the message")
	}
}

// A domain whose exchanger takes its time holds only its own message:
// mail for other domains is delivered meanwhile.
func TestDirectSlowExchangerHoldsOnlyItsMessage(t *testing.T) {
	e, _, _, held, release := slowAndFast(t, WorkerConfig{Concurrency: 2})
	defer release()

	stuck := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@slow.test"}}, Subject: subject("slow"), Text: "hello"})
	waitHeld(t, held)
	quick := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "carol@fast.test"}}, Subject: subject("fast"), Text: "hello"})
	e.waitState(t, e.boot.Inbox.ID, quick.MessageID, store.StatusSent)
	if m, _ := e.db.GetMessage(context.Background(), e.boot.Inbox.ID, stuck.MessageID); m.State != store.StatusSending {
		t.Errorf("the slow domain's message is %s, want still sending", m.State)
	}
	release()
	e.waitState(t, e.boot.Inbox.ID, stuck.MessageID, store.StatusSent)
}

// One slow domain's queue does not take every slot: with one message per
// domain in flight, its second message waits and mail for another domain
// goes ahead of it.
func TestDirectSlowDomainTakesItsShareOfSlots(t *testing.T) {
	e, slow, _, held, release := slowAndFast(t, WorkerConfig{Concurrency: 2, PerDomain: 1})
	defer release()

	first := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@slow.test"}}, Subject: subject("slow 1"), Text: "hello"})
	waitHeld(t, held)
	second := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "dave@slow.test"}}, Subject: subject("slow 2"), Text: "hello"})
	quick := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "carol@fast.test"}}, Subject: subject("fast"), Text: "hello"})
	e.waitState(t, e.boot.Inbox.ID, quick.MessageID, store.StatusSent)
	if m, _ := e.db.GetMessage(context.Background(), e.boot.Inbox.ID, second.MessageID); m.State != store.StatusQueued {
		t.Errorf("the slow domain's second message is %s, want queued behind its first", m.State)
	}
	release()
	e.waitState(t, e.boot.Inbox.ID, first.MessageID, store.StatusSent)
	e.waitState(t, e.boot.Inbox.ID, second.MessageID, store.StatusSent)
	if n := slow.dataCount(); n != 2 {
		t.Errorf("the slow exchanger got %d messages, want 2", n)
	}
}

// While a slow domain's message waits for its domain's slot, the worker
// still takes another domain's retry when it falls due.
func TestDirectRetryFallsDueWhileADomainIsFull(t *testing.T) {
	e, _, fast, held, release := slowAndFast(t, WorkerConfig{Concurrency: 2, PerDomain: 1, RetrySchedule: []time.Duration{time.Second}})
	defer release()
	fast.mu.Lock()
	fast.rcptCode["carol@fast.test"] = &gosmtp.SMTPError{Code: 451, EnhancedCode: gosmtp.EnhancedCode{4, 3, 0}, Message: "later"}
	fast.mu.Unlock()

	quick := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "carol@fast.test"}}, Subject: subject("fast"), Text: "hello"})
	e.waitState(t, e.boot.Inbox.ID, quick.MessageID, store.StatusDeferred)
	fast.mu.Lock()
	delete(fast.rcptCode, "carol@fast.test")
	fast.mu.Unlock()
	e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@slow.test"}}, Subject: subject("slow 1"), Text: "hello"})
	waitHeld(t, held)
	e.send(t, app.SendInput{To: []app.AddressInput{{Email: "dave@slow.test"}}, Subject: subject("slow 2"), Text: "hello"})
	// The retry falls due a second after the deferral, once the second
	// slow message waits for its domain. A worker that did not wake for
	// it would take it at some unrelated wake-up, 15 s later here.
	e.waitStateWithin(t, e.boot.Inbox.ID, quick.MessageID, store.StatusSent, 5*time.Second)
}

// A stop does not wait out a slow exchanger: after the grace period a
// transaction not past its final dot is cut (here, at an exchanger that
// never greets), and its recipient deferred to be tried again.
func TestDirectStopCutsSlowDelivery(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan struct{}, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go func() { io.Copy(io.Discard, c); c.Close() }() // silent until the client hangs up
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	e := newEnvConfig(t, app.OutboundDirect, WorkerConfig{Concurrency: 2, ShutdownGrace: 10 * time.Millisecond,
		RetrySchedule: []time.Duration{time.Hour}, Relay: directTo(t, port, map[string]string{"slow.test": "127.0.0.1"})})

	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@slow.test"}}, Subject: subject("slow"), Text: "hello"})
	waitHeld(t, accepted)
	stopped := make(chan struct{})
	go func() { e.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker's Run waited out the exchanger's timeouts")
	}
	dels, _ := e.db.DeliveriesOf(context.Background(), []string{res.MessageID})
	if d := dels[res.MessageID][0]; d.Status != store.StatusDeferred || d.Code != nil {
		t.Errorf("the cut delivery: %s %v, want deferred with no answer", d.Status, d.Code)
	}
}

// A message in flight is never handed out twice, not even once its claim's
// lease has run out: the slot it holds stays its only one, and other
// mail goes through the other slot.
func TestDirectMessageInFlightIsNotClaimedAgain(t *testing.T) {
	e, slow, _, held, release := slowAndFast(t, WorkerConfig{Concurrency: 2, Lease: time.Millisecond})
	defer release()

	stuck := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@slow.test"}}, Subject: subject("slow"), Text: "hello"})
	waitHeld(t, held)
	for i := range 3 { // each send wakes the worker, the slow claim's lease over
		quick := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "carol@fast.test"}}, Subject: subject(fmt.Sprint("fast ", i)), Text: "hello"})
		e.waitState(t, e.boot.Inbox.ID, quick.MessageID, store.StatusSent)
	}
	release()
	e.waitState(t, e.boot.Inbox.ID, stuck.MessageID, store.StatusSent)
	if n := slow.dataCount(); n != 1 {
		t.Errorf("the slow exchanger was handed the message %d times", n)
	}
}

// signalHandler is a slog handler that closes warned at the first
// warning.
type signalHandler struct {
	slog.Handler
	warned func()
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.warned()
	}
	return nil
}

// Past the final dot of DATA the exchanger may have the message: a stop
// then waits for its answer rather than cut it and send the message again
// later.
func TestDirectStopDoesNotCutAfterTheDot(t *testing.T) {
	slow := startRelay(t)
	slow.open = true
	_, port, _ := net.SplitHostPort(slow.addr)
	held, release := slow.hold()
	defer release()
	warned := make(chan struct{})
	logger := slog.New(signalHandler{slog.NewTextHandler(io.Discard, nil), sync.OnceFunc(func() { close(warned) })})
	e := newEnvConfig(t, app.OutboundDirect, WorkerConfig{Concurrency: 2, ShutdownGrace: 10 * time.Millisecond, Logger: logger,
		RetrySchedule: []time.Duration{time.Hour}, Relay: directTo(t, port, map[string]string{"slow.test": "127.0.0.1"})})

	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@slow.test"}}, Subject: subject("slow"), Text: "hello"})
	waitHeld(t, held) // the exchanger has read the dot
	stopped := make(chan struct{})
	go func() { e.stop(); close(stopped) }()
	select {
	case <-warned: // the grace is over and the delivery cancelled
	case <-time.After(20 * time.Second):
		t.Fatal("the worker never gave up waiting")
	}
	release()
	<-stopped
	dels, _ := e.db.DeliveriesOf(context.Background(), []string{res.MessageID})
	if d := dels[res.MessageID][0]; d.Status != store.StatusSent {
		t.Errorf("the delivery is %s, want sent: the exchanger had it", d.Status)
	}
}
