package smtp

import (
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	gosmtp "github.com/emersion/go-smtp"
)

// open starts an SMTP client session on conn: the greeting, STARTTLS
// with tc unless tc is nil, and EHLO as hostname, all within timeout,
// which then bounds each command. After STARTTLS this EHLO is the one
// the server goes by (RFC 3207 §4.2), and the TLS handshake runs with it
// (go-smtp starts TLS lazily); the EHLO before it, which go-smtp says as
// "localhost", it keeps out of reach on purpose (emersion/go-smtp#297).
func open(conn net.Conn, tc *tls.Config, hostname string, timeout time.Duration) (*gosmtp.Client, error) {
	sc := &setupConn{Conn: conn, end: time.Now().Add(timeout)}
	c := gosmtp.NewClient(sc)
	if tc != nil {
		var err error
		if c, err = gosmtp.NewClientStartTLS(sc, tc); err != nil {
			return nil, fmt.Errorf("STARTTLS: %w", err) // conn is closed
		}
	}
	if err := c.Hello(hostname); err != nil {
		c.Close()
		return nil, fmt.Errorf("EHLO: %w", err)
	}
	sc.done()
	c.CommandTimeout, c.SubmissionTimeout = timeout, timeout
	return c, nil
}

// startTLSOrPlain opens a session (open) with opportunistic TLS (RFC
// 7435): STARTTLS with tc when the server offers it, and a server that
// offers none, refuses it or fails the handshake spoken to in plain text
// on a second connection from redial. It returns the connection the
// session runs on.
func startTLSOrPlain(conn net.Conn, tc *tls.Config, hostname string, timeout time.Duration, redial func() (net.Conn, error)) (*gosmtp.Client, net.Conn, error) {
	if c, err := open(conn, tc, hostname, timeout); err == nil {
		return c, conn, nil
	}
	conn, err := redial()
	if err != nil {
		return nil, nil, err
	}
	c, err := open(conn, nil, hostname, timeout)
	return c, conn, err
}

// setupConn holds every deadline go-smtp sets on it to end until done,
// so a session's greeting, STARTTLS, handshake and EHLO take no longer
// than the caller's timeout together, whatever CommandTimeout the client
// starts with (go-smtp's default is 5 minutes, and its client only
// exists once NewClientStartTLS has greeted).
type setupConn struct {
	net.Conn
	mu  sync.Mutex
	end time.Time // zero once done
}

func (c *setupConn) bound(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.end.IsZero() && (t.IsZero() || t.After(c.end)) {
		return c.end
	}
	return t
}

func (c *setupConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.bound(t)) }
func (c *setupConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.bound(t)) }
func (c *setupConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.bound(t)) }

// done lifts the bound: from now on the client's own deadlines apply.
func (c *setupConn) done() {
	c.mu.Lock()
	c.end = time.Time{}
	c.mu.Unlock()
	c.Conn.SetDeadline(time.Time{})
}
