package outbound

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/smtp"
	"github.com/inboxd/inboxd/store"
)

// fakeRelay is a real go-smtp server on loopback with STARTTLS and AUTH,
// scripted per test: replies[n] answers the n-th DATA (250 when past the
// end), and rcptCode answers RCPT for an address.
type fakeRelay struct {
	mu       sync.Mutex
	replies  []*gosmtp.SMTPError
	rcptCode map[string]*gosmtp.SMTPError
	okText   string
	got      []relayed
	datas    int
	addr     string
	caFile   string
	srv      *gosmtp.Server
	received chan struct{}
	held     chan struct{} // with gate: signalled when a DATA waits for it
	gate     chan struct{} // when set, DATA answers once it is closed
	open     bool          // takes mail without AUTH, as a domain's MX does
}

// hold makes every DATA wait, its message read, for release before the
// relay answers; held receives when one waits.
func (r *fakeRelay) hold() (held <-chan struct{}, release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held, r.gate = make(chan struct{}, 100), make(chan struct{})
	return r.held, sync.OnceFunc(func() { close(r.gate) })
}

// dataCount is how many messages the relay was handed.
func (r *fakeRelay) dataCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.datas
}

type relayed struct {
	from  string
	rcpts []string
	raw   []byte
	tls   bool
	user  string
	helo  string // the EHLO name in force for MAIL (after STARTTLS, the one said over TLS)
	utf8  bool   // MAIL FROM said SMTPUTF8
}

type relaySession struct {
	r     *fakeRelay
	c     *gosmtp.Conn
	cur   relayed
	authd bool
}

func (s *relaySession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *relaySession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "relayuser" || pass != "relaypass" {
			return gosmtp.ErrAuthFailed
		}
		s.authd, s.cur.user = true, user
		return nil
	}), nil
}
func (s *relaySession) Reset()        { s.cur = relayed{user: s.cur.user} }
func (s *relaySession) Logout() error { return nil }
func (s *relaySession) Mail(from string, opts *gosmtp.MailOptions) error {
	s.r.mu.Lock()
	open := s.r.open
	s.r.mu.Unlock()
	if !s.authd && !open {
		return gosmtp.ErrAuthRequired
	}
	s.cur.from, s.cur.helo, s.cur.utf8 = from, s.c.Hostname(), opts != nil && opts.UTF8
	return nil
}
func (s *relaySession) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if e := s.r.rcptCode[to]; e != nil {
		return e
	}
	s.cur.rcpts = append(s.cur.rcpts, to)
	return nil
}
func (s *relaySession) Data(r io.Reader) error {
	raw, _ := io.ReadAll(r)
	s.r.mu.Lock()
	held, gate := s.r.held, s.r.gate
	s.r.mu.Unlock()
	if gate != nil {
		select {
		case held <- struct{}{}:
		default: // nobody counts this many
		}
		<-gate
	}
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	defer func() { s.r.received <- struct{}{} }()
	n := s.r.datas
	s.r.datas++
	if n < len(s.r.replies) && s.r.replies[n] != nil {
		return s.r.replies[n]
	}
	_, s.cur.tls = s.c.TLSConnectionState()
	s.cur.raw = raw
	s.r.got = append(s.r.got, s.cur)
	if s.r.okText != "" {
		return &gosmtp.SMTPError{Code: 250, EnhancedCode: gosmtp.EnhancedCode{2, 0, 0}, Message: s.r.okText}
	}
	return nil
}

func startRelay(t *testing.T, configure ...func(*gosmtp.Server)) *fakeRelay {
	t.Helper()
	return startRelayOn(t, "127.0.0.1:0", configure...)
}

// startRelayOn is startRelay listening on addr.
func startRelayOn(t *testing.T, addr string, configure ...func(*gosmtp.Server)) *fakeRelay {
	t.Helper()
	certPEM, keyPEM, err := smtp.SelfSignedCert("relay.test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, certPEM, 0o600)
	tc, err := smtp.SelfSignedTLS("unused")
	if err != nil {
		t.Fatal(err)
	}
	tc.Certificates = nil
	cert, err := tlsPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tc.Certificates = append(tc.Certificates, cert)
	r := &fakeRelay{rcptCode: map[string]*gosmtp.SMTPError{}, caFile: caFile, received: make(chan struct{}, 100)}
	r.srv = gosmtp.NewServer(gosmtp.BackendFunc(func(c *gosmtp.Conn) (gosmtp.Session, error) { return &relaySession{r: r, c: c}, nil }))
	r.srv.TLSConfig = tc
	r.srv.Domain = "relay.test"
	r.srv.ErrorLog = slogPrinter{}
	for _, f := range configure {
		f(r.srv)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	go r.srv.Serve(l)
	t.Cleanup(func() { r.srv.Close() })
	return r
}

type slogPrinter struct{}

func (slogPrinter) Printf(string, ...any) {}
func (slogPrinter) Println(...any)        {}

type env struct {
	db     *store.DB
	boot   store.Bootstrapped
	app    *app.App // sends go through the real send path
	worker *Worker
	stop   func() // stops the worker's Run and waits for it to return
}

// newApp is the operations over db with mode's routes, on the clock now
// (time.Now when nil).
func newApp(t *testing.T, db *store.DB, now func() time.Time, mode string, rewrites bool) *app.App {
	t.Helper()
	a, err := app.New(context.Background(), db, app.Config{Now: now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Send: app.SendConfig{Outbound: mode, RelayRewritesMessageIDs: rewrites}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// openStore opens and bootstraps a database on the clock now (time.Now
// when nil) and runs its writer until the test ends.
func openStore(t *testing.T, now func() time.Time) (*store.DB, store.Bootstrapped) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, store.Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Now: now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	boot, _, err := db.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); db.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-ran; db.Close() })
	return db, boot
}

func newEnv(t *testing.T, mode string, relay Relay, pattern string) *env {
	t.Helper()
	cfg := WorkerConfig{Relay: relay}
	if pattern != "" {
		cfg.MessageIDPattern = regexp.MustCompile(pattern)
		cfg.MessageIDFormat = "%s@email.amazonses.com"
	}
	return newEnvConfig(t, mode, cfg)
}

// newEnvConfig is newEnv with the worker configured by cfg, its retries
// 10 ms and 20 ms apart unless cfg says.
func newEnvConfig(t *testing.T, mode string, cfg WorkerConfig) *env {
	t.Helper()
	db, boot := openStore(t, nil)
	if cfg.RetrySchedule == nil {
		cfg.RetrySchedule = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	w := NewWorker(db, cfg)
	runCtx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); w.Run(runCtx) }()
	stop := sync.OnceFunc(func() { cancel(); <-ran })
	t.Cleanup(stop) // before openStore's: the worker stops before the database closes
	return &env{db: db, boot: boot, app: newApp(t, db, nil, mode, cfg.MessageIDPattern != nil), worker: w, stop: stop}
}

// send sends in from the default inbox with the admin key, through
// app.Send.
func (e *env) send(t *testing.T, in app.SendInput) app.SendResult {
	t.Helper()
	return e.sendFrom(t, e.boot.Inbox.ID, in)
}

func (e *env) sendFrom(t *testing.T, inboxID string, in app.SendInput) app.SendResult {
	t.Helper()
	ctx := context.Background()
	c, _, err := e.app.Authenticate(ctx, e.boot.AdminToken)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.app.Send(ctx, c, inboxID, nil, func(v any) error { *v.(*app.SendInput) = in; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// waitState waits, woken by commits, until the message reaches state.
func (e *env) waitState(t *testing.T, inboxID, messageID, state string) store.Message {
	t.Helper()
	return e.waitStateWithin(t, inboxID, messageID, state, 20*time.Second)
}

func (e *env) waitStateWithin(t *testing.T, inboxID, messageID, state string, d time.Duration) store.Message {
	t.Helper()
	deadline := time.After(d)
	for {
		changed := e.db.Changed()
		m, err := e.db.GetMessage(context.Background(), inboxID, messageID)
		if err != nil {
			t.Fatal(err)
		}
		if m.State == state {
			return m
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("message %s stuck in %s, want %s", messageID, m.State, state)
		}
	}
}

func subject(s string) *string { return &s }

// manualClock is a clock that moves only when the test sets it.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *manualClock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

func relayFor(t *testing.T, r *fakeRelay) *smtp.Relay {
	t.Helper()
	rl, err := smtp.NewRelay(smtp.RelayConfig{URL: "smtp://relayuser:relaypass@" + r.addr, CAFile: r.caFile, Hostname: "inboxd.test", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return rl
}

func TestRelayRetriesThenSends(t *testing.T) {
	r := startRelay(t)
	tmp := &gosmtp.SMTPError{Code: 451, EnhancedCode: gosmtp.EnhancedCode{4, 3, 0}, Message: "try later"}
	r.replies = []*gosmtp.SMTPError{tmp, tmp}
	e := newEnv(t, app.OutboundRelay, relayFor(t, r), "")
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "hello"})
	m := e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
	if len(r.got) != 1 || !r.got[0].tls || r.got[0].user != "relayuser" || r.got[0].from != "inbox@localhost" || r.got[0].helo != "inboxd.test" || r.datas != 3 {
		t.Fatalf("relay saw %+v after %d DATA", r.got, r.datas)
	}
	raw, _ := e.db.Raw(context.Background(), m.ID)
	if !bytes.Equal(r.got[0].raw, raw) {
		t.Fatalf("relay got other bytes than stored:\n%q\n%q", r.got[0].raw[max(0, len(r.got[0].raw)-40):], raw[max(0, len(raw)-40):])
	}
	dels, _ := e.db.DeliveriesOf(context.Background(), []string{m.ID})
	if len(dels[m.ID]) != 1 || dels[m.ID][0].Status != "sent" {
		t.Fatalf("deliveries: %+v", dels)
	}
}

func TestRelayBounce(t *testing.T) {
	r := startRelay(t)
	r.rcptCode["nobody@example.com"] = &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	e := newEnv(t, app.OutboundRelay, relayFor(t, r), "")
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "nobody@example.com"}, {Email: "ok@example.com"}}, Subject: subject("hi"), Text: "x"})
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusBounced)
	dels, _ := e.db.DeliveriesOf(context.Background(), []string{res.MessageID})
	d := dels[res.MessageID]
	if len(d) != 2 || d[0].Status != "bounced" || *d[0].Code != 550 || *d[0].Message != "5.1.1 no such user" || d[1].Status != "sent" {
		t.Fatalf("deliveries: %+v %+v", d[0], d[1])
	}
}

// A local part beyond ASCII needs SMTPUTF8 (RFC 6531): the relay is asked
// for it when it offers it, and a relay that does not offer it gets
// nothing, the recipients bounced with the reason. A domain beyond ASCII
// alone needs nothing: RCPT TO names its A-label.
func TestRelayNonASCIIAddress(t *testing.T) {
	// Its To: header is beyond ASCII still: SMTPUTF8 is asked for where
	// it is offered, and the message goes as it is where it is not.
	for _, offered := range []bool{false, true} {
		r := startRelay(t, func(s *gosmtp.Server) { s.EnableSMTPUTF8 = offered })
		e := newEnv(t, app.OutboundRelay, relayFor(t, r), "")
		res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "anna@münchen.example"}}, Subject: subject("hi"), Text: "x"})
		e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
		r.mu.Lock()
		if len(r.got) != 1 || !slices.Equal(r.got[0].rcpts, []string{"anna@xn--mnchen-3ya.example"}) || r.got[0].utf8 != offered {
			t.Errorf("relayed %d messages, want one to anna@xn--mnchen-3ya.example, with SMTPUTF8 %v", len(r.got), offered)
		}
		r.mu.Unlock()
	}

	// An inbox named beyond ASCII sends as it is named: inbound mail finds
	// it by that name, not by an A-label.
	r := startRelay(t, func(s *gosmtp.Server) { s.EnableSMTPUTF8 = true })
	e := newEnv(t, app.OutboundRelay, relayFor(t, r), "")
	news, err := e.db.CreateInbox(context.Background(), e.boot.ProjectID, store.NewInbox{Address: "news@bücher.example"})
	if err != nil {
		t.Fatal(err)
	}
	res := e.sendFrom(t, news.ID, app.SendInput{To: []app.AddressInput{{Email: "ok@example.com"}}, Subject: subject("hi"), Text: "x"})
	e.waitState(t, news.ID, res.MessageID, store.StatusSent)
	r.mu.Lock()
	if len(r.got) != 1 || r.got[0].from != "news@bücher.example" || !r.got[0].utf8 {
		t.Errorf("relayed %d messages, want one from news@bücher.example with SMTPUTF8", len(r.got))
	}
	r.mu.Unlock()

	for _, offered := range []bool{true, false} {
		r := startRelay(t, func(s *gosmtp.Server) { s.EnableSMTPUTF8 = offered })
		e := newEnv(t, app.OutboundRelay, relayFor(t, r), "")
		res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "jürgen@example.com"}, {Email: "ok@example.com"}}, Subject: subject("hi"), Text: "x"})
		if offered {
			e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
			r.mu.Lock()
			got := r.got
			r.mu.Unlock()
			if len(got) != 1 || !got[0].utf8 || !slices.Equal(got[0].rcpts, []string{"jürgen@example.com", "ok@example.com"}) {
				t.Fatalf("relayed %d messages (the first with SMTPUTF8: %v), want one to both recipients with it", len(got), len(got) > 0 && got[0].utf8)
			}
			continue
		}
		e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusBounced)
		dels, _ := e.db.DeliveriesOf(context.Background(), []string{res.MessageID})
		for _, d := range dels[res.MessageID] {
			if d.Status != store.StatusBounced || *d.Code != 553 || !strings.Contains(*d.Message, "SMTPUTF8") {
				t.Errorf("without SMTPUTF8: %s %v %q, want bounced 553 naming SMTPUTF8", d.Status, *d.Code, *d.Message)
			}
		}
		if n := r.dataCount(); n != 0 {
			t.Errorf("the relay without SMTPUTF8 was handed %d messages", n)
		}
	}
}

// A mailbox named twice (To and Cc, in any case) gets one copy: one RCPT
// TO, one recipient on the message, of the type it was first named as.
func TestRecipientNamedTwiceGetsOneCopy(t *testing.T) {
	r := startRelay(t)
	e := newEnv(t, app.OutboundRelay, relayFor(t, r), "")
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}, {Email: "carol@example.com"}, {Email: "Bob@Example.com"}},
		Cc: []app.AddressInput{{Email: "bob@example.com"}}, Bcc: []app.AddressInput{{Email: "carol@example.com"}}, Subject: subject("hi"), Text: "x"})
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 1 || strings.Join(r.got[0].rcpts, ",") != "bob@example.com,carol@example.com" {
		t.Fatalf("relay saw %+v", r.got)
	}
	ds, err := e.db.DeliveriesOf(context.Background(), []string{res.MessageID})
	if rs := ds[res.MessageID]; err != nil || len(rs) != 2 || rs[0].Type != "to" || rs[1].Type != "to" {
		t.Errorf("recipients %+v %v", rs, err)
	}
}

// An smtps:// relay is spoken to over implicit TLS, its certificate
// verified, and gets the credentials and the mail over it.
func TestRelayOverImplicitTLS(t *testing.T) {
	r := startRelay(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go r.srv.Serve(tls.NewListener(tcp, r.srv.TLSConfig))
	rl, err := smtp.NewRelay(smtp.RelayConfig{URL: "smtps://relayuser:relaypass@" + tcp.Addr().String(), CAFile: r.caFile, Hostname: "inboxd.test", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, app.OutboundRelay, rl, "")
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "x"})
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 1 || !r.got[0].tls || r.got[0].user != "relayuser" || r.got[0].helo != "inboxd.test" {
		t.Fatalf("relay saw %+v", r.got)
	}
}

// --relay-insecure allows a relay without TLS; it does not turn TLS
// down: a relay that offers STARTTLS gets the credentials and the mail
// over it, its self-signed certificate accepted.
func TestInsecureRelayStillUsesSTARTTLS(t *testing.T) {
	r := startRelay(t)
	rl, err := smtp.NewRelay(smtp.RelayConfig{URL: "smtp://relayuser:relaypass@" + r.addr, Insecure: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, app.OutboundRelay, rl, "")
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "x"})
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 1 || !r.got[0].tls || r.got[0].user != "relayuser" {
		t.Fatalf("relay saw %+v", r.got)
	}
}

func TestRelayDownAtFirst(t *testing.T) {
	// Reserve a port, send while nothing listens, then start the relay there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := &fakeRelay{addr: addr}
	rl, err := smtp.NewRelay(smtp.RelayConfig{URL: "smtp://relayuser:relaypass@" + addr, Insecure: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, app.OutboundRelay, rl, "")
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "x"})
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusDeferred)
	r.rcptCode = map[string]*gosmtp.SMTPError{}
	r.received = make(chan struct{}, 10)
	r.srv = gosmtp.NewServer(gosmtp.BackendFunc(func(c *gosmtp.Conn) (gosmtp.Session, error) { return &relaySession{r: r, c: c}, nil }))
	r.srv.AllowInsecureAuth = true
	r.srv.ErrorLog = slogPrinter{}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go r.srv.Serve(l)
	defer r.srv.Close()
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
}

// An SES-style relay rewrites the Message-ID; a reply referencing the
// rewritten id that arrives before the relay's 250 waits, then threads.
func TestRelayRewritesMessageID(t *testing.T) {
	r := startRelay(t)
	r.okText = "Ok 0100018c-rewritten-id"
	hold := make(chan struct{})
	r.mu.Lock() // the relay hangs until the reply has arrived
	go func() { <-hold; r.mu.Unlock() }()
	e := newEnv(t, app.OutboundRelay, relayFor(t, r), `Ok (\S+)`)
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "sales@supplier.example"}}, Subject: subject("quote"), Text: "price?"})

	reply := "From: sales@supplier.example\r\nMessage-ID: <r1@supplier.example>\r\nIn-Reply-To: <0100018c-rewritten-id@email.amazonses.com>\r\nSubject: Re: quote\r\n\r\n42 EUR\r\n"
	d, err := e.db.Ingest(context.Background(), &store.Incoming{Raw: []byte(reply), Parsed: message.Parse([]byte(reply)),
		Targets: []store.Target{{InboxID: e.boot.Inbox.ID}}, ReceivedAt: time.Now()})
	if err != nil || !d[0].Deferred {
		t.Fatalf("reply before the relay answered: %+v %v", d, err)
	}
	close(hold)
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
	deadline := time.After(10 * time.Second)
	for {
		changed := e.db.Changed()
		msgs, _ := e.db.ThreadMessages(context.Background(), res.ThreadID)
		if len(msgs) == 2 {
			if msgs[1].ThreadMatch != "in_reply_to" || msgs[1].RFCMessageID != "<r1@supplier.example>" {
				t.Fatalf("reply stored as %+v", msgs[1])
			}
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("deferred reply was not threaded after the relay's 250")
		}
	}
}

// A relay that keeps our Message-IDs (no --relay-message-id-pattern): the
// id the gateway generated is final when the send is stored, so a reply to
// some other, unknown id is stored at once, not held, while the relay has
// not answered yet.
func TestRelayWithoutPatternDefersNothing(t *testing.T) {
	r := startRelay(t)
	hold := make(chan struct{})
	r.mu.Lock() // the relay hangs until the reply has been stored
	go func() { <-hold; r.mu.Unlock() }()
	e := newEnv(t, app.OutboundRelay, relayFor(t, r), "")
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "sales@supplier.example"}}, Subject: subject("quote"), Text: "price?"})

	reply := "From: sales@supplier.example\r\nMessage-ID: <r2@supplier.example>\r\nIn-Reply-To: <unknown@supplier.example>\r\nSubject: Re: quote\r\n\r\n42 EUR\r\n"
	d, err := e.db.Ingest(context.Background(), &store.Incoming{Raw: []byte(reply), Parsed: message.Parse([]byte(reply)),
		Targets: []store.Target{{InboxID: e.boot.Inbox.ID}}, ReceivedAt: time.Now()})
	close(hold)
	if err != nil || d[0].Deferred || d[0].Match != "new" || d[0].MessageID == "" {
		t.Fatalf("reply while the relay had not answered: %+v %v", d, err)
	}
	e.waitState(t, e.boot.Inbox.ID, res.MessageID, store.StatusSent)
}

func TestLocalConversationBetweenInboxes(t *testing.T) {
	e := newEnv(t, app.OutboundCapture, nil, "")
	ctx := context.Background()
	bob, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "bob@localhost", DisplayName: "Bob"})
	if err != nil {
		t.Fatal(err)
	}
	first := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@localhost"}, {Email: "ext@example.com"}}, Subject: subject("Lunch?"), Text: "Noon?"})
	e.waitState(t, e.boot.Inbox.ID, first.MessageID, store.StatusDelivered)
	in, _ := e.db.InboxMessages(ctx, bob.ID)
	if len(in) != 1 {
		t.Fatalf("bob has %d messages", len(in))
	}
	dels, _ := e.db.DeliveriesOf(ctx, []string{first.MessageID})
	if dels[first.MessageID][1].Status != "captured" {
		t.Fatalf("external recipient: %+v", dels[first.MessageID][1])
	}
	// Bob replies; it lands in the first sender's thread.
	reply := e.sendFrom(t, bob.ID, app.SendInput{ReplyToMessageID: in[0].ID, Text: "Yes!"})
	if reply.ThreadID != in[0].ThreadID {
		t.Fatal("reply left bob's thread")
	}
	e.waitState(t, bob.ID, reply.MessageID, store.StatusDelivered)
	msgs, _ := e.db.ThreadMessages(ctx, first.ThreadID)
	if len(msgs) != 2 || msgs[1].Direction != "inbound" || msgs[1].Subject != "Re: Lunch?" || msgs[1].ThreadMatch != "in_reply_to" ||
		msgs[1].Sequence != 2 {
		t.Fatalf("sender's thread: %+v", msgs)
	}
	bobThread, _ := e.db.ThreadMessages(ctx, in[0].ThreadID)
	if len(bobThread) != 2 || bobThread[1].ThreadMatch != "reply_to_message_id" || bobThread[1].To[0].Email != "inbox@localhost" {
		t.Fatalf("bob's thread: %+v", bobThread)
	}
	if !strings.Contains(strings.Join(msgs[1].References, " "), msgs[0].RFCMessageID) || msgs[1].InReplyTo[0] != msgs[0].RFCMessageID {
		t.Fatalf("threading headers: irt %v refs %v", msgs[1].InReplyTo, msgs[1].References)
	}
}

func tlsPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	return tls.X509KeyPair(certPEM, keyPEM)
}

// Each temporary answer defers the recipient by the schedule's next delay
// (the last one repeating) scaled by the injected jitter, counted on the
// injected clock, until the retry window closes and the recipient fails.
// The worker's rounds are run by hand as the clock reaches each retry.
func TestRetryScheduleWithJitter(t *testing.T) {
	r := startRelay(t)
	r.rcptCode["bob@example.com"] = &gosmtp.SMTPError{Code: 452, EnhancedCode: gosmtp.EnhancedCode{4, 2, 2}, Message: "mailbox full"}
	clock := newManualClock()
	ctx := context.Background()
	db, boot := openStore(t, clock.Now)
	relay := relayFor(t, r)
	t.Cleanup(func() { relay.Close() })

	steps := []struct {
		jitter float64
		delay  time.Duration // schedule delay before jitter; 0: fails
	}{
		{0, time.Minute},        // ×0.9
		{0.75, 5 * time.Minute}, // ×1.05
		{0.5, 15 * time.Minute}, // ×1.0
		{0, 15 * time.Minute},   // the last delay repeats; 34m39s after the first attempt
		{0.999, 0},              // 15m×1.0998 would end past MaxRetryAge: failed
	}
	attempts := 0
	reg := prometheus.NewRegistry()
	w := NewWorker(db, WorkerConfig{Relay: relay, Now: clock.Now, MaxRetryAge: 40 * time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		RetrySchedule: []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute}, Metrics: NewMetrics(reg),
		Jitter: func() float64 { attempts++; return steps[min(attempts, len(steps))-1].jitter }})
	e := &env{db: db, boot: boot, app: newApp(t, db, clock.Now, app.OutboundRelay, false)}
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "x"})

	for i, s := range steps {
		at, ok, err := db.NextDeliveryAt(ctx)
		if err != nil || !ok {
			t.Fatalf("attempt %d: nothing due (%v)", i+1, err)
		}
		clock.Set(at)
		// One round of Run's, waited for.
		var wg sync.WaitGroup
		if _, err := w.dispatch(ctx, ctx, map[string][]string{}, make(chan string, 1), &wg); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if attempts != i+1 {
			t.Fatalf("attempt %d drew the jitter %d times in all", i+1, attempts)
		}
		d, _ := db.DeliveriesOf(ctx, []string{res.MessageID})
		got := d[res.MessageID][0]
		next, pending, _ := db.NextDeliveryAt(ctx)
		if s.delay == 0 {
			if got.Status != store.StatusFailed || pending {
				t.Fatalf("attempt %d: %s, next attempt %v (%v); want failed", i+1, got.Status, next, pending)
			}
			continue
		}
		want := at.Add(time.Duration(float64(s.delay) * (0.9 + 0.2*s.jitter)))
		if got.Status != store.StatusDeferred || *got.Code != 452 || *got.Message != "4.2.2 mailbox full" ||
			!pending || next.Sub(want).Abs() >= time.Millisecond { // the store keeps milliseconds
			t.Fatalf("attempt %d at %v: %s %v %v, next attempt %v; want deferred until %v", i+1, at, got.Status, *got.Code, *got.Message, next, want)
		}
	}
	// inboxd_outbound_attempts_total counts each attempt by its result.
	for result, want := range map[string]float64{"deferred": 4, "failed": 1, "sent": 0, "bounced": 0} {
		if got := testutil.ToFloat64(w.cfg.Metrics.attempts.WithLabelValues(result)); got != want {
			t.Errorf("attempts %s = %v, want %v", result, got, want)
		}
	}
}

// A retry's delay counts from the relay's answer, not from the start of
// the attempt: an attempt that took ten minutes to be refused is retried
// a minute after the refusal.
func TestRetryDelayCountsFromTheAnswer(t *testing.T) {
	r := startRelay(t)
	r.replies = []*gosmtp.SMTPError{{Code: 451, EnhancedCode: gosmtp.EnhancedCode{4, 3, 0}, Message: "try later"}}
	held, release := r.hold()
	clock := newManualClock()
	ctx := context.Background()
	db, boot := openStore(t, clock.Now)
	relay := relayFor(t, r)
	t.Cleanup(func() { relay.Close() })
	w := NewWorker(db, WorkerConfig{Relay: relay, Now: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		RetrySchedule: []time.Duration{time.Minute}, Jitter: func() float64 { return 0.5 }})
	e := &env{db: db, boot: boot, app: newApp(t, db, clock.Now, app.OutboundRelay, false)}
	res := e.send(t, app.SendInput{To: []app.AddressInput{{Email: "bob@example.com"}}, Subject: subject("hi"), Text: "x"})

	var wg sync.WaitGroup
	if _, err := w.dispatch(ctx, ctx, map[string][]string{}, make(chan string, 1), &wg); err != nil {
		t.Fatal(err)
	}
	<-held
	answered := clock.Now().Add(10 * time.Minute)
	clock.Set(answered)
	release()
	wg.Wait()
	d, _ := db.DeliveriesOf(ctx, []string{res.MessageID})
	next, pending, _ := db.NextDeliveryAt(ctx)
	if got := d[res.MessageID][0]; got.Status != store.StatusDeferred || !pending || !next.Equal(answered.Add(time.Minute)) {
		t.Fatalf("%s, next attempt %v (%v); want deferred until %v", got.Status, next, pending, answered.Add(time.Minute))
	}
}
