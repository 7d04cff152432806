package smtp

import (
	"net"
	"sync"
	"time"
)

// limitListener enforces the concurrent-session limit and the session
// duration limit below go-smtp, which has neither.
type limitListener struct {
	net.Listener
	s *Server
}

// tooBusy is the reply to a connection over the session limit
// (RFC 5321 §3.1: 421 may be the greeting when service is not available).
const tooBusy = "421 4.7.0 Too many concurrent sessions, try again later\r\n"

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !l.s.acquire() {
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			c.Write([]byte(tooBusy))
			c.Close()
			continue
		}
		lc := &limitConn{Conn: c, release: l.s.release}
		if d := l.s.cfg.SessionTimeout; d > 0 {
			lc.end = time.Now().Add(d) // a network deadline: wall clock, not the injectable one
			c.SetDeadline(lc.end)
		}
		return lc, nil
	}
}

func (s *Server) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.MaxSessions > 0 && s.sessions >= s.cfg.MaxSessions {
		return false
	}
	s.sessions++
	return true
}

func (s *Server) release() {
	s.mu.Lock()
	s.sessions--
	s.mu.Unlock()
}

// limitConn releases its session slot once, on Close, and keeps every
// deadline go-smtp sets within the session's end.
type limitConn struct {
	net.Conn
	end     time.Time
	release func()
	once    sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

func (c *limitConn) clamp(t time.Time) time.Time {
	if !c.end.IsZero() && (t.IsZero() || t.After(c.end)) {
		return c.end
	}
	return t
}

func (c *limitConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *limitConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.clamp(t)) }
func (c *limitConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }
