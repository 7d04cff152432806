package smtp

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// scriptedSMTP is a loopback SMTP server that greets only when greet is
// true, offers STARTTLS and answers it with 220 and then bytes that are
// not TLS, and answers every other command 250. It reports each
// connection's number on conns.
func scriptedSMTP(t *testing.T, greet bool) (addr string, conns <-chan int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close() })
	ch := make(chan int, 10)
	go func() {
		for n := 1; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ch <- n
			go func() {
				defer c.Close()
				if !greet {
					<-done
					return
				}
				io.WriteString(c, "220 mx.test ESMTP\r\n")
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
					case strings.HasPrefix(cmd, "EHLO"):
						io.WriteString(c, "250-mx.test\r\n250 STARTTLS\r\n")
					case cmd == "STARTTLS":
						io.WriteString(c, "220 go ahead\r\nthis is not TLS\r\n")
						return
					default:
						io.WriteString(c, "250 ok\r\n")
					}
				}
			}()
		}
	}()
	return l.Addr().String(), ch
}

// A server that takes STARTTLS and then fails the handshake is spoken to
// in plain text on a second connection: go-smtp runs the handshake only
// with the next command, so startTLSOrPlain has to make it happen.
func TestStartTLSOrPlainFallsBackAfterAFailedHandshake(t *testing.T) {
	addr, conns := scriptedSMTP(t, true)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	redial := func() (net.Conn, error) { return net.Dial("tcp", addr) }
	c, used, err := startTLSOrPlain(conn, &tls.Config{InsecureSkipVerify: true}, "inboxd.test", 5*time.Second, redial)
	if err != nil {
		t.Fatalf("no session: %v", err)
	}
	defer c.Close()
	if _, tls := c.TLSConnectionState(); tls || used == conn || <-conns != 1 || <-conns != 2 {
		t.Errorf("TLS %v, on the first connection %v", tls, used == conn)
	}
	if err := c.Noop(); err != nil {
		t.Errorf("the plain session does not work: %v", err)
	}
}

// A server that never greets is given up on after the session's timeout,
// not after go-smtp's five-minute default, and on each connection tried.
func TestOpenIsBoundedByTheTimeout(t *testing.T) {
	addr, _ := scriptedSMTP(t, false)
	redial := func() (net.Conn, error) { return net.Dial("tcp", addr) }
	conn, err := redial()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = startTLSOrPlain(conn, &tls.Config{InsecureSkipVerify: true}, "inboxd.test", 200*time.Millisecond, redial)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err %v, want a timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %v", d)
	}
}
