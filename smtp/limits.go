package smtp

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	gosmtp "github.com/emersion/go-smtp"
)

// limitListener enforces the session limits (concurrent, per client
// address, duration) below go-smtp, which has none of them, and refuses
// connections once Shutdown has begun.
type limitListener struct {
	net.Listener
	s *Server
	// tls, for an implicit-TLS listener (ServeTLS), is its configuration:
	// a refusal is then said inside a handshake, as the client expects.
	tls *tls.Config
}

// Refusals of a connection, sent as the greeting (RFC 5321 §3.1: 421 may
// be the greeting when service is not available).
const (
	tooBusy      = "421 4.7.0 Too many concurrent sessions, try again later\r\n"
	tooBusyForIP = "421 4.7.0 Too many concurrent sessions from your address, try again later\r\n"
)

// errSessionDrained ends a session from below go-smtp: its command loop
// ends a session silently on a read error that is net.ErrClosed, so the
// 421 written just before stays the last reply.
var errSessionDrained = fmt.Errorf("smtp: session drained for shutdown: %w", net.ErrClosed)

// errSessionOver ends, the same silent way, a session whose data phase
// timed out: its 451 is the last reply.
var errSessionOver = fmt.Errorf("smtp: session over after a data timeout: %w", net.ErrClosed)

// replyTimeout bounds the write of a reply sent from below go-smtp.
const replyTimeout = 5 * time.Second

func replyLine(e *gosmtp.SMTPError) string {
	return fmt.Sprintf("%d %d.%d.%d %s\r\n", e.Code, e.EnhancedCode[0], e.EnhancedCode[1], e.EnhancedCode[2], e.Message)
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc, refusal := l.s.admit(c)
		if refusal != "" {
			l.refuse(c, refusal)
			continue
		}
		return lc, nil
	}
}

// maxRefusing bounds the refusals over TLS being said at once; past it a
// refused connection is closed unanswered, so a flood costs neither
// goroutines nor memory.
const maxRefusing = 64

// refuse says refusal to c and closes it. In plain text that is one
// write into a new connection's empty send buffer. Over implicit TLS the
// reply waits for the client's handshake, and a client that never sends
// one would hold up every connection behind it for replyTimeout: it is
// said off the accept loop, by a goroutine that Shutdown and Close end
// and wait for.
func (l *limitListener) refuse(c net.Conn, refusal string) {
	c.SetDeadline(time.Now().Add(replyTimeout))
	if l.tls == nil {
		io.WriteString(c, refusal)
		c.Close()
		return
	}
	s := l.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining || len(s.refusing) >= maxRefusing {
		c.Close()
		return
	}
	s.refusing[c] = struct{}{}
	s.refusals.Go(func() {
		io.WriteString(tls.Server(c, l.tls), refusal) // the write runs the handshake first
		c.Close()
		s.mu.Lock()
		delete(s.refusing, c)
		s.mu.Unlock()
	})
}

// endRefusals ends the refusals being said and waits for their
// goroutines; no refusal starts after it.
func (s *Server) endRefusals() {
	s.mu.Lock()
	s.draining = true
	for c := range s.refusing {
		c.Close()
	}
	s.mu.Unlock()
	s.refusals.Wait()
}

// admit takes a session slot for c, or says why not.
func (s *Server) admit(c net.Conn) (*limitConn, string) {
	var ip netip.Addr
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ip = a.AddrPort().Addr().Unmap()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.draining:
		return nil, replyLine(errShuttingDown)
	case s.cfg.MaxSessions > 0 && len(s.conns) >= s.cfg.MaxSessions:
		return nil, tooBusy
	case s.cfg.MaxSessionsPerIP > 0 && ip.IsValid() && s.perIP[ip] >= s.cfg.MaxSessionsPerIP:
		return nil, tooBusyForIP
	}
	lc := &limitConn{Conn: c, s: s, ip: ip}
	if d := s.cfg.SessionTimeout; d > 0 {
		lc.end = time.Now().Add(d) // a network deadline: wall clock, not the injectable one
		c.SetReadDeadline(lc.end)
		c.SetWriteDeadline(lc.end.Add(sessionEndGrace))
	}
	s.conns[lc] = struct{}{}
	if ip.IsValid() {
		s.perIP[ip]++
	}
	return lc, ""
}

func (s *Server) release(c *limitConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	if c.ip.IsValid() {
		if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
			delete(s.perIP, c.ip)
		}
	}
}

// drain marks every session for shutdown and wakes those waiting for a
// command; from then on no connection is admitted.
func (s *Server) drain() {
	s.mu.Lock()
	s.draining = true
	for _, l := range s.listeners {
		l.Close()
	}
	conns := make([]*limitConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.startDrain()
	}
}

// limitConn is the network connection under go-smtp (and under tls.Conn
// after STARTTLS). It releases its session slot once, on Close; keeps
// every deadline go-smtp sets within the session's end; and, knowing
// whether the session is in a data phase, turns a timeout there into
// errDataTimeout and carries out the drain of Shutdown.
//
// Every Read comes from the session's one go-smtp goroutine (DATA is read
// in Session.Data, which go-smtp calls on that goroutine; BDAT chunks are
// copied from it into the pipe that Data reads).
type limitConn struct {
	net.Conn
	s    *Server
	ip   netip.Addr
	end  time.Time
	once sync.Once

	mu sync.Mutex
	// top is the session's go-smtp connection; top.Conn() is the
	// connection go-smtp writes to (a *tls.Conn after STARTTLS).
	top          *gosmtp.Conn
	readDeadline time.Time // the last one go-smtp asked for, clamped
	// inData is set from the start of Session.Data until go-smtp resets
	// the transaction after answering it (Session.Reset), so that the
	// data, and what go-smtp discards of it, is read to the end.
	inData bool
	// inTx is set from the first accepted RCPT until Reset.
	inTx     bool
	dead     bool // a data phase timed out: the session is over
	draining bool // Shutdown has begun
	drained  bool // the 421 is sent; the next read ends the session
}

// connOf finds the limitConn under a go-smtp connection (nil when the
// server was not given one).
func connOf(c *gosmtp.Conn) *limitConn {
	nc := c.Conn()
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	lc, _ := nc.(*limitConn)
	return lc
}

func (c *limitConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	dead, drain := c.dead, c.draining && !c.busy()
	c.mu.Unlock()
	switch {
	case dead:
		return 0, errSessionOver
	case drain:
		return 0, c.sayDrained()
	}
	n, err := c.Conn.Read(p)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		return n, err
	}
	c.mu.Lock()
	inData, drain := c.inData, c.draining && !c.busy()
	if inData {
		// The rest of the data may still arrive; read as commands after
		// the 451 it would be the client's forged transactions. So the
		// session ends with that reply.
		c.dead = true
	}
	c.mu.Unlock()
	switch {
	case inData:
		return n, errDataTimeout
	case drain: // woken by startDrain
		return n, c.sayDrained()
	}
	return n, err
}

// busy reports a transaction the drain lets finish: one with recipients
// (its DATA or BDAT may already sit in go-smtp's buffer, and go-smtp reads
// a BDAT chunk before Session.Data has begun) or in data. c.mu is held.
func (c *limitConn) busy() bool { return c.inTx || c.inData }

// sayDrained answers 421 4.3.2 in place of the next command, once, through
// the connection go-smtp writes to, so that after STARTTLS it is
// encrypted. go-smtp writes nothing while it waits for a command, so the
// write cannot interleave with one of its own. (A session that has not
// said EHLO has no go-smtp connection yet and gets the reply in plain
// text: correct unless it did STARTTLS first, which RFC 3207 §4 forbids.)
func (c *limitConn) sayDrained() error {
	c.mu.Lock()
	first := !c.drained
	c.drained = true
	var w net.Conn = c
	if c.top != nil {
		w = c.top.Conn()
	}
	c.mu.Unlock()
	if first {
		w.SetWriteDeadline(time.Now().Add(replyTimeout))
		io.WriteString(w, replyLine(errShuttingDown))
	}
	return errSessionDrained
}

// startDrain marks the session for shutdown and, unless it is busy,
// wakes a Read waiting for the next command with a deadline in the past.
func (c *limitConn) startDrain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	if !c.busy() {
		c.Conn.SetReadDeadline(time.Unix(1, 0))
	}
}

// attach records the session's go-smtp connection (NewSession).
func (c *limitConn) attach(top *gosmtp.Conn) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.top = top
	c.mu.Unlock()
}

// beginData marks the start of Session.Data.
func (c *limitConn) beginData() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inData = true
	if c.draining {
		// startDrain may have woken the read of the DATA command line
		// just as it arrived: the data must still be read.
		c.Conn.SetReadDeadline(c.readDeadline)
	}
}

// beginTx marks a transaction that has a recipient (Session.Rcpt).
func (c *limitConn) beginTx() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inTx = true
	if c.draining {
		// startDrain may have woken the read of the next command just
		// as this transaction became one to finish.
		c.Conn.SetReadDeadline(c.readDeadline)
	}
}

// endData marks the transaction over (answered or abandoned).
func (c *limitConn) endData() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.inData, c.inTx = false, false
	c.mu.Unlock()
}

// refuseDrained reports whether Shutdown has begun; if so the caller
// answers 421 4.3.2 itself and the session ends at its next read.
func (c *limitConn) refuseDrained() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.draining {
		c.drained = true
	}
	return c.draining
}

func (c *limitConn) Close() error {
	c.once.Do(func() { c.s.release(c) })
	return c.Conn.Close()
}

func (c *limitConn) clamp(t time.Time) time.Time {
	if !c.end.IsZero() && (t.IsZero() || t.After(c.end)) {
		return c.end
	}
	return t
}

func (c *limitConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline = c.clamp(t)
	err := c.Conn.SetReadDeadline(c.readDeadline)
	c.mu.Unlock()
	return cmp.Or(err, c.SetWriteDeadline(t))
}

func (c *limitConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDeadline = c.clamp(t)
	return c.Conn.SetReadDeadline(c.readDeadline)
}

// SetWriteDeadline lets writes run a little past the session's end, so
// that the reply to the read the end cut short (go-smtp's 421 4.4.2) is
// still written: a client at the limit gets a code, not a bare close.
func (c *limitConn) SetWriteDeadline(t time.Time) error {
	if !c.end.IsZero() && (t.IsZero() || t.After(c.end.Add(sessionEndGrace))) {
		t = c.end.Add(sessionEndGrace)
	}
	return c.Conn.SetWriteDeadline(t)
}

// sessionEndGrace is how long after the session's end its last reply may
// take to write.
const sessionEndGrace = 5 * time.Second
