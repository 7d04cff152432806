package smtp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// Over implicit TLS the session is TLS from its greeting (no STARTTLS
// offered, the envelope says TLS), and a refusal for too many sessions is
// said inside the handshake, where the client can read it.
func TestServeTLS(t *testing.T) {
	cert, err := SelfSignedTLS("mx.test")
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, Config{MaxSessions: 1, TLS: cert}, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); e.srv.ServeTLS(l, cert) }()
	t.Cleanup(func() { e.srv.Shutdown(context.Background()); <-served })

	dialTLS := func() (*tls.Conn, *bufio.Reader) {
		c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	first, r := dialTLS()
	if greeting, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(greeting, "220 ") {
		t.Fatalf("greeting over TLS: %q %v", greeting, err)
	}
	first.Write([]byte("EHLO client.test\r\n"))
	var ehlo strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		ehlo.WriteString(line)
		if strings.HasPrefix(line, "250 ") {
			break
		}
	}
	if strings.Contains(ehlo.String(), "STARTTLS") {
		t.Errorf("STARTTLS offered inside TLS:\n%s", ehlo.String())
	}

	// The one session slot is taken: the next client is refused, in TLS,
	// even behind a connection that never starts its handshake. Its
	// refusal waits for that handshake; said in the accept loop, it would
	// hold every connection behind it for replyTimeout.
	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_, r2 := dialTLS()
	if refusal, err := r2.ReadString('\n'); err != nil || !strings.HasPrefix(refusal, "421 4.7.0 ") {
		t.Errorf("refusal over TLS: %q %v", refusal, err)
	}
	// Answered while the silent connection still waits: not after it.
	silent.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the silent connection was given up (%v) before the next client was refused", err)
	}
}
