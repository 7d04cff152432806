// Package smtp is the SMTP side of inboxd: the inbound server (a go-smtp
// backend that turns sessions into store ingests, SPEC §2) with its
// listener limits, TLS and AUTH.
package smtp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/spool"
	"github.com/inboxd/inboxd/store"
)

// Accept policies for RCPT TO (SPEC §2).
const (
	AcceptKnown  = "known"
	AcceptDomain = "domain"
	AcceptAny    = "any"
)

// Store is what the server needs from the database.
type Store interface {
	LookupRecipient(ctx context.Context, address string) (store.Target, error)
	HasInboxAtDomain(ctx context.Context, domain string) (bool, error)
	Authenticate(ctx context.Context, h store.TokenHash) (store.Key, int64, error)
	Ingest(ctx context.Context, in *store.Incoming) ([]store.Delivered, error)
}

// Submitter sends what an authenticated client submits through the send
// path (SPEC §6): routes, approval gate and the durable queue. It returns
// ErrSenderNotAllowed for a From the key may not send from.
type Submitter interface {
	Submit(ctx context.Context, key store.Key, rcpts []string, raw []byte) error
}

// Config configures the inbound server.
type Config struct {
	Hostname        string // announced in the greeting and the Received: header
	MaxMessageBytes int64
	MaxRecipients   int
	MaxSessions     int
	// MaxSessionsPerIP caps the concurrent sessions of one client address
	// (0: no cap).
	MaxSessionsPerIP int
	CommandTimeout   time.Duration
	SessionTimeout   time.Duration
	// IngestTimeout bounds how long DATA waits for the commit before
	// answering 451.
	IngestTimeout time.Duration
	TLS           *tls.Config // enables STARTTLS
	AuthInsecure  bool        // offer AUTH without TLS
	// AuthAcceptAny accepts any credentials: an API key still
	// authenticates with its grant, anything else gets none.
	AuthAcceptAny bool
	Accept        string
	Domains       []string
	Now           func() time.Time
	Logger        *slog.Logger
	// Spool holds a message that outgrows memory while it is received and
	// parsed; nil keeps every message in memory.
	Spool *spool.Dir
	// Metrics, when set, counts sessions, messages, bytes and refusals.
	Metrics *Metrics
	// Submitter takes mail from sessions authenticated with an API key that
	// has messages:send and addresses recipients outside the gateway; nil
	// refuses such recipients like any unknown address.
	Submitter Submitter
}

// Server is the inbound SMTP server.
type Server struct {
	cfg   Config
	store Store
	srv   *gosmtp.Server
	log   *slog.Logger
	now   func() time.Time

	mu        sync.Mutex
	conns     map[*limitConn]struct{} // the sessions, each holding a slot
	perIP     map[netip.Addr]int
	draining  bool
	listeners []net.Listener        // given to Serve; closed by Shutdown
	refusing  map[net.Conn]struct{} // refusals being said over TLS (limitListener.refuse)
	refusals  sync.WaitGroup        // their goroutines
}

// NewServer builds a server; start it with Serve.
func NewServer(cfg Config, st Store) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.IngestTimeout == 0 {
		cfg.IngestTimeout = time.Minute
	}
	s := &Server{cfg: cfg, store: st, log: cfg.Logger, now: cfg.Now,
		conns: map[*limitConn]struct{}{}, perIP: map[netip.Addr]int{}, refusing: map[net.Conn]struct{}{}}
	srv := gosmtp.NewServer(s)
	srv.Domain = cfg.Hostname
	srv.MaxMessageBytes = cfg.MaxMessageBytes
	srv.MaxRecipients = cfg.MaxRecipients
	// QUIRK: RFC 5321 §4.5.3.1.6 caps lines at 1000 octets, but real mail
	// (machine-made HTML, bare-LF bodies) exceeds it; refusing it would lose
	// mail, so the cap only guards memory.
	srv.MaxLineLength = maxLineLength
	srv.ReadTimeout = cfg.CommandTimeout
	srv.WriteTimeout = cfg.CommandTimeout
	srv.EnableSMTPUTF8 = true
	srv.AllowInsecureAuth = cfg.AuthInsecure
	srv.ErrorLog = slogPrinter{cfg.Logger}
	srv.TLSConfig = cfg.TLS
	s.srv = srv
	return s
}

// Serve accepts sessions on l until Shutdown.
func (s *Server) Serve(l net.Listener) error { return s.serve(l, nil) }

// ServeTLS serves SMTP over implicit TLS on l (RFC 8314, the port 465
// style some clients insist on): the TLS handshake comes first, and the
// session is TLS from its greeting on, so STARTTLS is not offered.
func (s *Server) ServeTLS(l net.Listener, cfg *tls.Config) error { return s.serve(l, cfg) }

func (s *Server) serve(l net.Listener, tlsCfg *tls.Config) error {
	// go-smtp's Shutdown closes only the listeners its Serve has already
	// registered: one handed over after it (a test, or main, racing the
	// first signal) would block in Accept for ever. So the listeners are
	// tracked here, under the same lock as draining.
	s.mu.Lock()
	if s.draining {
		s.mu.Unlock()
		l.Close()
		return nil
	}
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	var ln net.Listener = &limitListener{Listener: l, s: s, tls: tlsCfg}
	if tlsCfg != nil {
		// Outside the limits, so the session's connection is the
		// *tls.Conn go-smtp recognises as TLS.
		ln = tls.NewListener(ln, tlsCfg)
	}
	err := s.srv.Serve(ln)
	if errors.Is(err, gosmtp.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for sessions to end (SPEC §13): a
// transaction in DATA or BDAT finishes and gets its reply; any other
// session, idle or between commands, is answered 421 4.3.2 at its next
// read, and one waiting for a command is woken for it at once, so idle
// sessions do not hold the shutdown.
func (s *Server) Shutdown(ctx context.Context) error {
	s.drain()
	err := s.srv.Shutdown(ctx)
	s.endRefusals()
	// drain closed the listeners already: go-smtp's second close is no news.
	if errors.Is(err, gosmtp.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Close closes the listener and every session at once.
func (s *Server) Close() error {
	err := s.srv.Close()
	s.endRefusals()
	if errors.Is(err, gosmtp.ErrServerClosed) {
		return nil
	}
	return err
}

// NewSession implements gosmtp.Backend.
func (s *Server) NewSession(c *gosmtp.Conn) (gosmtp.Session, error) {
	remote := ""
	if addr, ok := c.Conn().RemoteAddr().(*net.TCPAddr); ok {
		remote = addr.IP.String()
	}
	lc := connOf(c)
	lc.attach(c)
	ss := &session{s: s, conn: c, lc: lc, remoteIP: remote}
	if m := s.cfg.Metrics; m != nil {
		m.sessions.Inc()
		return meteredSession{ss, m}, nil
	}
	return ss, nil
}

type session struct {
	s        *Server
	conn     *gosmtp.Conn
	lc       *limitConn // nil when not served through limitListener
	remoteIP string
	authUser string
	// token is the hash of the API key AUTH accepted. The session keeps
	// it, not the key: the grant is read again at every MAIL and DATA
	// (SPEC §2), so a revoked key stops at its next transaction.
	token *store.TokenHash

	key *store.Key // the token's key, read at this transaction's MAIL and DATA, when it has messages:send

	external bool // some recipient is outside the gateway (submission)
	open     bool // MAIL was accepted: a transaction is open until Reset
	from     string
	size     int64
	rcpts    []string
	targets  []store.Target
}

var _ gosmtp.AuthSession = (*session)(nil)

// Reset is called by go-smtp after every answered DATA/BDAT, at RSET and
// at a new EHLO: the transaction, and any data phase, is over.
func (ss *session) Reset() {
	ss.open, ss.from, ss.size, ss.rcpts, ss.targets, ss.external, ss.key = false, "", 0, nil, nil, false, nil
	ss.lc.endData()
}

func (ss *session) Logout() error { return nil }

func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain, sasl.Login} }

func (ss *session) Auth(mech string) (sasl.Server, error) {
	check := func(username, password string) error { return ss.authenticate(username, password) }
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, username, password string) error { return check(username, password) }), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	}
	return nil, gosmtp.ErrAuthUnknownMechanism
}

// authenticate checks the password as an API key with messages:send
// (with AuthAcceptAny: any key, or anything else as nobody in particular,
// with no grant). It identifies the client (recorded in the envelope); only
// the key's messages:send widens where the session may deliver.
func (ss *session) authenticate(username, password string) error {
	h := store.HashToken(password)
	k, err := ss.s.key(h)
	switch {
	case err == nil && (k.Has("messages:send") || ss.s.cfg.AuthAcceptAny):
		ss.authUser, ss.token = k.ID, &h
		return nil
	case ss.s.cfg.AuthAcceptAny && errors.Is(err, store.ErrNotFound):
		ss.authUser = username
		return nil
	case err == nil || errors.Is(err, store.ErrNotFound):
		return gosmtp.ErrAuthFailed
	}
	return ss.s.reply("auth", err)
}

// key authenticates a token hash through the store's key cache, the one
// the API uses.
func (s *Server) key(h store.TokenHash) (store.Key, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.IngestTimeout)
	defer cancel()
	k, _, err := s.store.Authenticate(ctx, h)
	return k, err
}

// checkGrant reads the session's key again and holds it for the
// transaction when it may send.
func (ss *session) checkGrant() error {
	ss.key = nil
	if ss.token == nil {
		return nil
	}
	k, err := ss.s.key(*ss.token)
	if errors.Is(err, store.ErrNotFound) {
		return errKeyRevoked
	}
	if err != nil {
		return err
	}
	if k.Has("messages:send") {
		ss.key = &k
	}
	return nil
}

func (ss *session) Mail(from string, opts *gosmtp.MailOptions) error {
	if ss.open {
		// QUIRK: go-smtp accepts a second MAIL and keeps the first one's
		// recipients, so a DATA after it would be acknowledged for
		// recipients this session no longer holds: refuse it instead.
		return errNestedMail
	}
	ss.Reset()
	if ss.lc.refuseDrained() {
		return errShuttingDown
	}
	if err := ss.checkGrant(); err != nil {
		return ss.s.reply("mail", err)
	}
	ss.open, ss.from = true, from
	if opts != nil {
		// go-smtp refuses a SIZE= above the limit itself (552 5.3.4).
		ss.size = opts.Size
	}
	return nil
}

func (ss *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	if ss.lc.refuseDrained() {
		return errShuttingDown
	}
	sent := strings.TrimSpace(to)
	if strings.Contains(sent, "@") {
		// A fully qualified domain's root dot (inbox@example.com.) names
		// the same domain.
		sent = strings.TrimSuffix(sent, ".")
	}
	_, domain, ok := splitAddress(strings.ToLower(sent))
	if !ok {
		return errUnknownRecipient
	}
	ctx, cancel := context.WithTimeout(context.Background(), ss.s.cfg.IngestTimeout)
	defer cancel()
	t, err := ss.s.resolve(ctx, sent)
	// (An address the accept policy creates an inbox for is local.)
	if errors.Is(err, errUnknownRecipient) {
		err = ss.s.refusal(ctx, domain)
	}
	if ss.key != nil && ss.s.cfg.Submitter != nil && errors.Is(err, errRelayDenied) {
		// An authenticated submitter may address the world (not an
		// unknown address of a domain served here: that is 550 5.1.1);
		// the send path decides each recipient's route.
		ss.external = true
		ss.rcpts = append(ss.rcpts, to)
		ss.lc.beginTx()
		return nil
	}
	if err != nil {
		return ss.s.reply("rcpt", err)
	}
	ss.rcpts = append(ss.rcpts, to)
	ss.targets = append(ss.targets, t)
	ss.lc.beginTx()
	return nil
}

// resolve maps a recipient to an inbox: the exact address, else user@domain
// for user+tag@domain, else (policy permitting) an inbox to create. The
// address is matched case-insensitively; the tag is kept as sent.
func (s *Server) resolve(ctx context.Context, sent string) (store.Target, error) {
	t, err := s.store.LookupRecipient(ctx, sent)
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return store.Target{}, err
	}
	base, tag := message.SplitTag(sent)
	_, domain, _ := splitAddress(base)
	if s.cfg.Accept == AcceptAny || s.cfg.Accept == AcceptDomain && slices.Contains(s.cfg.Domains, domain) {
		if !store.ValidInboxAddress(base) {
			// `"a b"@x`, `"a@b"@x`: POST /inboxes would not create it either.
			return store.Target{}, errNoInboxAddress
		}
		return store.Target{Address: base, Tag: tag}, nil
	}
	return store.Target{}, errUnknownRecipient
}

// refusal is the answer to an address that is no inbox here: 550 5.1.1 at
// a domain the gateway serves (a --domain, or an existing inbox's), else
// 550 5.7.1, since only a sending grant reaches beyond the gateway (SPEC
// §2). Under --accept any every address is an inbox, so this never runs.
func (s *Server) refusal(ctx context.Context, domain string) error {
	if slices.Contains(s.cfg.Domains, domain) {
		return errUnknownRecipient
	}
	served, err := s.store.HasInboxAtDomain(ctx, domain)
	switch {
	case err != nil:
		return err
	case served:
		return errUnknownRecipient
	}
	return errRelayDenied
}

func splitAddress(addr string) (local, domain string, ok bool) {
	i := strings.LastIndexByte(addr, '@')
	if i <= 0 || i == len(addr)-1 {
		return "", "", false
	}
	return addr[:i], addr[i+1:], true
}

func (ss *session) Data(r io.Reader) error {
	ss.lc.beginData()
	hint := 0
	if ss.size > 0 && ss.size <= ss.s.cfg.MaxMessageBytes {
		hint = int(ss.size)
	}
	buf := ss.s.cfg.Spool.Buffer(hint)
	if _, err := buf.ReadFrom(r); err != nil {
		buf.Close()
		if errors.Is(err, gosmtp.ErrDataReset) {
			// RSET or a closed connection abandoned a BDAT transaction:
			// no reply is owed.
			ss.lc.endData()
			return err
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// The client closed the connection before the end of the
			// data: not a failure of ours, and nobody is left to answer.
			return errDataCut
		}
		return ss.s.reply("data", err)
	}
	if err := ss.checkGrant(); err != nil {
		buf.Close()
		return ss.s.reply("data", err)
	}
	return ss.s.reply("data", ss.deliver(buf))
}

// deliver hands the message in buf to the send path (authenticated
// submission) or the store. A message small enough to sit in memory is
// parsed from there; a large one is parsed from its spool file with its
// attachments spilled too, so it is never in memory whole. The store owns
// the spooled parts once Ingest has them (it may still read them after a
// timeout); until then deliver closes them.
func (ss *session) deliver(buf *spool.Buffer) error {
	raw, inMemory := buf.Bytes()
	if ss.external {
		defer buf.Close()
		if ss.key == nil { // the key lost messages:send since RCPT
			return errRelayDenied
		}
		if !inMemory {
			var err error
			if raw, err = io.ReadAll(buf.Reader()); err != nil {
				return err
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), ss.s.cfg.IngestTimeout)
		defer cancel()
		return ss.s.cfg.Submitter.Submit(ctx, *ss.key, ss.rcpts, raw)
	}
	if ss.token != nil {
		// A submission (SPEC §2): its Bcc: reaches no copy, the local
		// inboxes' included.
		var err error
		if buf, err = ss.s.dropBcc(buf); err != nil {
			return err
		}
		raw, inMemory = buf.Bytes()
	}
	if len(ss.targets) == 0 {
		// go-smtp let DATA through without a recipient of this session's:
		// a 250 would acknowledge mail stored nowhere.
		buf.Close()
		return errors.New("data without recipients")
	}
	received := ss.s.now()
	_, isTLS := ss.conn.TLSConnectionState()
	in := &store.Incoming{
		Raw:   raw,
		Trace: ss.s.traceHeader(ss, isTLS, received),
		Envelope: store.Envelope{
			MailFrom: ss.from, RcptTo: slices.Clone(ss.rcpts), RemoteIP: ss.remoteIP,
			Helo: ss.conn.Hostname(), TLS: isTLS, AuthUser: ss.authUser,
		},
		Targets:    slices.Clone(ss.targets),
		ReceivedAt: received,
	}
	if inMemory {
		in.Parsed = message.Parse(raw)
	} else {
		in.Large = buf
		in.Parsed = message.ParseReader(buf.Reader(), message.Options{
			Spill: func() message.Blob { return ss.s.cfg.Spool.Buffer(0) },
		})
		if in.Parsed.SpillErr != nil {
			in.Parsed.Close()
			buf.Close()
			return fmt.Errorf("spool attachment: %w", in.Parsed.SpillErr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ss.s.cfg.IngestTimeout)
	defer cancel()
	ds, err := ss.s.store.Ingest(ctx, in)
	if err != nil {
		return err
	}
	return alreadyStored(ds)
}

// alreadyStored is the reply to a transaction whose every copy was a
// duplicate delivery of a stored message (SPEC §4): 250 naming the stored
// copies. go-smtp sends a bare *SMTPError returned by Data as the reply
// whatever its code (conn.go, dataErrorToStatus), so a 2xx one is how a
// custom success text gets out; reply passes it on. When only some target
// inboxes had the message, the others stored it and the plain 250 answers;
// so does a retry of a message still held by the deferred lookup, which has
// no id to name yet.
func alreadyStored(ds []store.Delivered) error {
	ids := make([]string, 0, len(ds))
	for _, d := range ds {
		if !d.Duplicate || d.MessageID == "" {
			return nil
		}
		ids = append(ids, d.MessageID)
	}
	if len(ids) == 0 {
		return nil
	}
	return &gosmtp.SMTPError{Code: 250, EnhancedCode: gosmtp.EnhancedCode{2, 0, 0}, Message: "Already stored as " + strings.Join(ids, ", ")}
}

// maxBccScan bounds the header section dropBcc reads of a spooled
// message; one longer than this is not real mail and keeps its header.
const maxBccScan = 1 << 20

// dropBcc returns buf, or a copy of it without its Bcc: fields
// (message.WithoutBcc); buf is closed when it is replaced or on error.
func (s *Server) dropBcc(buf *spool.Buffer) (*spool.Buffer, error) {
	var header []byte
	if raw, ok := buf.Bytes(); ok {
		header = raw
	} else {
		br := bufio.NewReader(io.LimitReader(buf.Reader(), maxBccScan))
		for {
			line, err := br.ReadBytes('\n')
			header = append(header, line...)
			if err == io.EOF || len(bytes.TrimRight(line, "\r\n")) == 0 {
				break
			}
			if err != nil {
				buf.Close()
				return nil, fmt.Errorf("read spooled header: %w", err)
			}
		}
	}
	stripped := message.WithoutBcc(header)
	if len(stripped) == len(header) {
		return buf, nil
	}
	out := s.cfg.Spool.Buffer(int(buf.Len()))
	r := buf.Reader()
	_, err := out.Write(stripped)
	if err == nil {
		_, err = io.CopyN(io.Discard, r, int64(len(header)))
	}
	if err == nil {
		_, err = out.ReadFrom(r)
	}
	buf.Close()
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("copy without Bcc: %w", err)
	}
	return out, nil
}

// traceHeader builds the Received: header of RFC 5321 §4.4.
func (s *Server) traceHeader(ss *session, isTLS bool, at time.Time) []byte {
	proto := "ESMTP"
	if isTLS {
		proto += "S"
	}
	if ss.authUser != "" {
		proto += "A"
	}
	helo := sanitizeTrace(ss.conn.Hostname())
	return fmt.Appendf(nil, "Received: from %s ([%s])\r\n\tby %s (inboxd) with %s;\r\n\t%s\r\n",
		helo, ss.remoteIP, s.cfg.Hostname, proto, at.Format(time.RFC1123Z))
}

// sanitizeTrace keeps a client-supplied HELO name from breaking the header.
func sanitizeTrace(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x21 || r == 0x7f || r == '(' || r == ')' {
			return -1
		}
		return r
	}, s)
	if s == "" {
		return "unknown"
	}
	return s
}

// maxLineLength bounds one command line. Message lines are not bounded
// by it (third_party/go-smtp, patched): only the message size is.
const maxLineLength = 1 << 20

// loginServer is the server side of the obsolete but widespread AUTH LOGIN
// (draft-murchison-sasl-login): two prompts, username then password.
type loginServer struct {
	check    func(username, password string) error
	username string
	step     int
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.step {
	case 0:
		l.step++
		if len(response) > 0 { // initial response carries the username
			l.username = string(response)
			l.step++
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 1:
		l.username = string(response)
		l.step++
		return []byte("Password:"), false, nil
	case 2:
		l.step++
		return nil, true, l.check(l.username, string(response))
	}
	return nil, true, sasl.ErrUnexpectedClientResponse
}

// slogPrinter adapts go-smtp's Logger to slog.
type slogPrinter struct{ l *slog.Logger }

func (p slogPrinter) Printf(format string, v ...any) { p.l.Warn("smtp: " + fmt.Sprintf(format, v...)) }
func (p slogPrinter) Println(v ...any)               { p.l.Warn("smtp: " + fmt.Sprint(v...)) }
