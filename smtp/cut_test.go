package smtp

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inboxd/inboxd/internal/dnstest"
)

// fakeMX is a hand-written SMTP server on loopback for one connection:
// greet says whether it greets at all, and quit is its answer to QUIT.
// accepted is closed once it has the connection, closed once the client
// has closed it.
func fakeMX(t *testing.T, greet bool, quit string) (addr string, accepted, closed <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	in, gone := make(chan struct{}), make(chan struct{})
	accept, done := sync.OnceFunc(func() { close(in) }), sync.OnceFunc(func() { close(gone) })
	serve := func(c net.Conn) {
		defer c.Close()
		if !greet {
			io.Copy(io.Discard, c) // until the client closes
			done()
			return
		}
		r := bufio.NewReader(c)
		io.WriteString(c, "220 mx.test ESMTP\r\n")
		inData, took := false, false
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				if took {
					done() // the client closed the connection it sent on
				}
				return
			}
			cmd := strings.ToUpper(strings.TrimSpace(line))
			switch {
			case inData:
				if cmd == "." {
					inData, took = false, true
					io.WriteString(c, "250 2.0.0 queued\r\n")
				}
			case strings.HasPrefix(cmd, "EHLO"):
				io.WriteString(c, "250 mx.test\r\n")
			case cmd == "STARTTLS":
				io.WriteString(c, "454 4.7.0 not now\r\n")
			case cmd == "DATA":
				inData = true
				io.WriteString(c, "354 go ahead\r\n")
			case cmd == "QUIT":
				io.WriteString(c, quit+"\r\n")
			default:
				io.WriteString(c, "250 ok\r\n")
			}
		}
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accept()
			go serve(c)
		}
	}()
	return l.Addr().String(), in, gone
}

func waitClosed(t *testing.T, closed <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal(what)
	}
}

// A relay that takes the connection and never greets does not hold a
// Send whose context has ended (a stop) for the relay's timeouts.
func TestRelaySendEndsWithItsContextWhileConnecting(t *testing.T) {
	addr, accepted, closed := fakeMX(t, false, "")
	r, err := NewRelay(RelayConfig{URL: "smtp://" + addr, Insecure: true, Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	replies := make(chan string, 1)
	go func() {
		got, _ := r.Send(ctx, "a@from.test", []string{"b@x.test"}, []byte("Subject: x\r\n\r\nhi\r\n"))
		replies <- got[0].Message
	}()
	waitClosed(t, accepted, "the relay was never dialled")
	cancel()
	waitClosed(t, closed, "the relay's connection is still open after the context ended")
	select {
	case msg := <-replies:
		if msg == "" {
			t.Error("the cut recipient has no reason recorded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send still waits after its context ended")
	}
}

// An exchanger that refuses QUIT after taking the message still has its
// connection closed: nothing is left open per delivery.
func TestDirectClosesWhenQuitFails(t *testing.T) {
	addr, _, closed := fakeMX(t, true, "500 5.5.1 no")
	host, port, _ := net.SplitHostPort(addr)
	_, resolver := dnstest.Serve(t, dnstest.Zone{MX: map[string][]string{"x.test": {"mx.x.test"}}, A: map[string]net.IP{"mx.x.test": net.ParseIP(host)}})
	d := NewDirect(DirectConfig{Port: port, Resolver: resolver, Timeout: 10 * time.Minute})
	got, _ := d.Send(context.Background(), "a@from.test", []string{"b@x.test"}, []byte("Subject: x\r\n\r\nhi\r\n"))
	if got[0].Code != 250 {
		t.Fatalf("reply %+v, want 250", got[0])
	}
	waitClosed(t, closed, "the exchanger's connection is still open after Send")
}
