package smtp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

// wire is a raw SMTP client: it writes exact lines and reads replies one
// line at a time, so a test sees every reply the server sends, unasked
// ones included.
type wire struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

// dialWire connects and reads the greeting.
func dialWire(t *testing.T, addr string) *wire {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w := &wire{t: t, conn: c, r: bufio.NewReader(c)}
	w.expect("220 ")
	return w
}

// line reads one reply line (without CRLF); io.EOF at the end.
func (w *wire) line() (string, error) {
	w.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	l, err := w.r.ReadString('\n')
	if err != nil {
		return l, err
	}
	return strings.TrimRight(l, "\r\n"), nil
}

// expect reads a reply (skipping continuation lines) and checks its last
// line's prefix.
func (w *wire) expect(prefix string) string {
	w.t.Helper()
	for {
		l, err := w.line()
		if err != nil {
			w.t.Fatalf("want %q, got %q, %v", prefix, l, err)
		}
		if len(l) > 3 && l[3] == '-' {
			continue
		}
		if !strings.HasPrefix(l, prefix) {
			w.t.Fatalf("want %q, got %q", prefix, l)
		}
		return l
	}
}

func (w *wire) send(s string) {
	w.t.Helper()
	if _, err := io.WriteString(w.conn, s); err != nil {
		w.t.Fatal(err)
	}
}

// cmd sends one command line and checks the reply.
func (w *wire) cmd(line, prefix string) string {
	w.t.Helper()
	w.send(line + "\r\n")
	return w.expect(prefix)
}

// startTLS upgrades the session (after EHLO) and says EHLO again.
func (w *wire) startTLS() {
	w.t.Helper()
	w.cmd("STARTTLS", "220 ")
	tc := tls.Client(w.conn, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		w.t.Fatal(err)
	}
	w.conn, w.r = tc, bufio.NewReader(tc)
	w.cmd("EHLO client.test", "250 ")
}

// closed checks that the server has ended the session.
func (w *wire) closed() {
	w.t.Helper()
	// A reset is an end too: the server closed with our bytes unread.
	if l, err := w.line(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		w.t.Fatalf("want the end of the session, got %q, %v", l, err)
	}
}

// refusal connects and returns all the server sends until it closes the
// connection (a refused session: one 421 line).
func refusal(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(c)
	return string(got)
}

// One address holds at most MaxSessionsPerIP sessions; the next gets 421
// 4.7.0 at once, and a session that ends frees its slot.
func TestSessionsPerIP(t *testing.T) {
	e := start(t, Config{MaxSessionsPerIP: 32}, nil)
	var open []*wire
	for range 32 {
		open = append(open, dialWire(t, e.addr))
	}
	if got := refusal(t, e.addr); !strings.HasPrefix(got, "421 4.7.0 ") {
		t.Fatalf("33rd session got %q", got)
	}
	// QUIT: the server frees the slot before it closes the connection, so
	// once the client sees the end the slot is free.
	open[0].cmd("QUIT", "221 ")
	open[0].closed()
	dialWire(t, e.addr).cmd("EHLO client.test", "250 ")
}

// overPlainAndTLS runs f on a server with STARTTLS, once with plain
// sessions and once with sessions that use it.
func overPlainAndTLS(t *testing.T, f func(t *testing.T, tlsCfg *tls.Config, useTLS bool)) {
	tlsCfg, err := SelfSignedTLS("mx.test")
	if err != nil {
		t.Fatal(err)
	}
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "starttls"}[useTLS], func(t *testing.T) { f(t, tlsCfg, useTLS) })
	}
}

// hello connects and says EHLO, over TLS when useTLS.
func hello(t *testing.T, addr string, useTLS bool) *wire {
	t.Helper()
	w := dialWire(t, addr)
	w.cmd("EHLO client.test", "250 ")
	if useTLS {
		w.startTLS()
	}
	return w
}

// A data phase that stalls answers 451 4.4.2 (try again), not go-smtp's
// permanent 554 with the network error and addresses in it; through TLS
// too, where the timeout reaches go-smtp through tls.Conn.
func TestBDATTimeoutIs451(t *testing.T) {
	overPlainAndTLS(t, func(t *testing.T, tlsCfg *tls.Config, useTLS bool) {
		e := start(t, Config{TLS: tlsCfg, CommandTimeout: 300 * time.Millisecond}, nil)
		w := hello(t, e.addr, useTLS)
		w.cmd("MAIL FROM:<a@example.com>", "250 ")
		w.cmd("RCPT TO:<inbox@localhost>", "250 ")
		w.send("BDAT 100\r\nonly ten b")
		if reply := w.expect("451 "); reply != "451 4.4.2 Timeout waiting for data" {
			t.Errorf("reply %q", reply)
		}
	})
}

// After a data phase timed out, what the client sends next is the rest of
// its message, not commands: the session ends with the 451, and a
// transaction smuggled in the late data is never stored.
func TestDataTimeoutEndsSession(t *testing.T) {
	for _, mode := range []string{"DATA", "BDAT"} {
		t.Run(mode, func(t *testing.T) {
			e := start(t, Config{CommandTimeout: 300 * time.Millisecond}, nil)
			w := hello(t, e.addr, false)
			w.cmd("MAIL FROM:<a@example.com>", "250 ")
			w.cmd("RCPT TO:<inbox@localhost>", "250 ")
			if mode == "DATA" {
				w.cmd("DATA", "354 ")
				w.send("Subject: real\r\n\r\nfirst half ")
			} else {
				w.send("BDAT 400\r\nSubject: real\r\n\r\nfirst half ")
			}
			if reply := w.expect("451 "); !strings.HasPrefix(reply, "451 4.4.2 ") {
				t.Errorf("timeout reply %q", reply)
			}
			w.send("\r\nMAIL FROM:<evil@x>\r\nRCPT TO:<inbox@localhost>\r\nDATA\r\nSubject: injected\r\n\r\nboo\r\n.\r\n")
			w.closed()
			if msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID); len(msgs) != 0 {
				t.Errorf("stored %d messages, first %q", len(msgs), msgs[0].Subject)
			}
		})
	}
}

// SIGTERM (SPEC §13): Shutdown ends idle sessions at once with 421 4.3.2,
// lets a transaction already in DATA finish with its 250, refuses a MAIL
// that comes after, and returns well before its deadline.
func TestShutdownDrainsSessions(t *testing.T) {
	overPlainAndTLS(t, func(t *testing.T, tlsCfg *tls.Config, useTLS bool) {
		e := start(t, Config{TLS: tlsCfg, CommandTimeout: time.Minute}, nil)
		idle := hello(t, e.addr, useTLS)
		greeted := dialWire(t, e.addr) // no EHLO yet: no session
		inData := hello(t, e.addr, useTLS)
		inData.cmd("MAIL FROM:<a@example.com>", "250 ")
		inData.cmd("RCPT TO:<inbox@localhost>", "250 ")
		inData.cmd("DATA", "354 ")
		inData.send("Message-ID: <drain@x>\r\nSubject: drain\r\n\r\npart one\r\n")

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- e.srv.Shutdown(ctx) }()

		for _, w := range []*wire{idle, greeted} {
			if reply := w.expect("421 "); reply != "421 4.3.2 Service shutting down" {
				t.Errorf("idle session got %q", reply)
			}
			w.closed()
		}
		// The drain has begun (the idle sessions heard of it); the
		// transaction in DATA still completes, and what it pipelines next
		// is refused.
		inData.send("part two\r\n.\r\nMAIL FROM:<a@example.com>\r\n")
		inData.expect("250 ")
		inData.expect("421 4.3.2 ")
		inData.closed()
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		msgs, err := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID)
		if err != nil || len(msgs) != 1 || msgs[0].Subject != "drain" {
			t.Fatalf("stored: %+v %v", msgs, err)
		}
	})
}

// gatedRcpt holds the first recipient lookup until the test opens gate.
type gatedRcpt struct {
	*store.DB
	in, gate chan struct{}
	once     sync.Once
}

func (g *gatedRcpt) LookupRecipient(ctx context.Context, a string) (store.Target, error) {
	g.once.Do(func() { close(g.in); <-g.gate })
	return g.DB.LookupRecipient(ctx, a)
}

// A transaction with a recipient is one the drain lets finish: go-smtp
// reads a pipelined BDAT chunk before Session.Data starts, and a drain
// that struck then answered 421 and then a 554 with internal text.
func TestShutdownFinishesPipelinedBDAT(t *testing.T) {
	g := &gatedRcpt{in: make(chan struct{}), gate: make(chan struct{})}
	e := start(t, Config{CommandTimeout: time.Minute}, func(db *store.DB) Store { g.DB = db; return g })
	w := hello(t, e.addr, false)
	w.cmd("MAIL FROM:<a@example.com>", "250 ")
	w.send("RCPT TO:<inbox@localhost>\r\nBDAT 5 LAST\r\n")
	<-g.in
	e.srv.drain() // Shutdown's first step, while RCPT is in flight
	close(g.gate)
	w.expect("250 ") // RCPT
	w.send("hello")
	if reply := w.expect("2"); !strings.HasPrefix(reply, "250 2.0.0 ") {
		t.Errorf("BDAT LAST: %q", reply)
	}
	if reply := w.expect("4"); reply != "421 4.3.2 Service shutting down" {
		t.Errorf("after the transaction: %q", reply)
	}
	w.closed()
	if msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID); len(msgs) != 1 {
		t.Errorf("stored %d messages", len(msgs))
	}
}

// A listener handed to Serve after Shutdown (main's startup race, or a
// test's cleanup racing its Serve goroutine) is closed at once instead of
// blocking in Accept for ever.
func TestServeAfterShutdown(t *testing.T) {
	e := start(t, Config{}, nil)
	srv := NewServer(Config{Hostname: "mx.test", Accept: AcceptKnown, Logger: e.srv.log}, e.db)
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(l); err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after Shutdown")
	}
}

// A second MAIL inside a transaction is refused (RFC 5321 §4.1.1.2); go-smtp
// would otherwise keep the first MAIL's recipients and let a DATA be
// acknowledged for mail this session stores nowhere.
func TestNestedMailRefused(t *testing.T) {
	e := start(t, Config{}, nil)
	w := hello(t, e.addr, false)
	w.cmd("MAIL FROM:<a@example.com>", "250 ")
	w.cmd("RCPT TO:<inbox@localhost>", "250 ")
	if reply := w.cmd("MAIL FROM:<evil@x>", "5"); reply != "503 5.5.1 Nested MAIL command" {
		t.Errorf("nested MAIL: %q", reply)
	}
	// The open transaction is unharmed: its DATA stores the message.
	w.cmd("DATA", "354 ")
	w.send("Subject: kept\r\n\r\nx\r\n.\r\n")
	w.expect("250 ")
	if msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID); len(msgs) != 1 || msgs[0].Subject != "kept" {
		t.Errorf("stored %+v", msgs)
	}
}

// A session that reaches SessionTimeout ends with 421 4.4.2, not a bare
// close (SPEC §2: the proper code, never a hang or a silent drop).
func TestSessionTimeoutSaysSo(t *testing.T) {
	e := start(t, Config{SessionTimeout: 300 * time.Millisecond}, nil)
	w := dialWire(t, e.addr)
	w.cmd("EHLO client.test", "250 ")
	// The client keeps the session busy; the end cuts a read short.
	for {
		w.send("NOOP\r\n")
		l, err := w.line()
		if err != nil {
			t.Fatalf("the session ended without a reply: %q, %v", l, err)
		}
		if strings.HasPrefix(l, "250") {
			continue
		}
		if !strings.HasPrefix(l, "421 4.4.2") {
			t.Fatalf("the session ended with %q, want 421 4.4.2", l)
		}
		break
	}
	w.closed()
}

// A BDAT chunk over the size limit is answered 552 and discarded, and the
// session goes on, as after DATA over the limit: the chunk's bytes are
// data, not lines, even when refused.
func TestBDATOverTheLimitKeepsTheSession(t *testing.T) {
	e := start(t, Config{MaxMessageBytes: 1000}, nil)
	w := hello(t, e.addr, false)
	w.cmd("MAIL FROM:<a@example.com>", "250 ")
	w.cmd("RCPT TO:<inbox@localhost>", "250 ")
	chunk := strings.Repeat("x", 3*maxLineLength) // one line, longer than a command may be
	w.send(fmt.Sprintf("BDAT %d LAST\r\n%s", len(chunk), chunk))
	w.expect("552 5.3.4")
	w.cmd("MAIL FROM:<a@example.com>", "250 ")
	w.cmd("RCPT TO:<inbox@localhost>", "250 ")
	w.send("BDAT 20 LAST\r\nSubject: s\r\n\r\nsmall\r\n")
	w.expect("250 ")
}

// Commands out of sequence are 503 5.5.1, bad sequence (RFC 5321 §4.2.4),
// not 502, command not implemented.
func TestCommandsOutOfSequenceAre503(t *testing.T) {
	e := start(t, Config{}, nil)
	w := dialWire(t, e.addr)
	w.cmd("MAIL FROM:<a@example.com>", "503 5.5.1")
	w.cmd("EHLO client.test", "250 ")
	w.cmd("RCPT TO:<inbox@localhost>", "503 5.5.1")
	w.cmd("DATA", "503 5.5.1")
	w.cmd("MAIL FROM:<a@example.com>", "250 ")
	w.cmd("RCPT TO:<nobody@localhost>", "550 ")
	w.cmd("DATA", "503 5.5.1")
	w.send("BDAT 3 LAST\r\nabc")
	w.expect("503 5.5.1")
	w.cmd("NOOP", "250 ")
}
