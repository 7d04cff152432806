package smtp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"
	"golang.org/x/net/idna"

	"github.com/inboxd/inboxd/store"
)

// RelayConfig configures the smarthost client (SPEC §6).
type RelayConfig struct {
	// URL is smtp://user:pass@host:port (STARTTLS required unless
	// Insecure, and used when offered even then) or smtps://… (implicit
	// TLS).
	URL      string
	CAFile   string // extra roots; the system roots otherwise (SSL_CERT_FILE works)
	Insecure bool   // allow a plaintext smtp:// relay (and an unverified STARTTLS one)
	Hostname string // our EHLO name
	Timeout  time.Duration
}

// Relay hands mail to a smarthost, reusing one connection while it works.
type Relay struct {
	cfg    RelayConfig
	u      *url.URL
	tls    *tls.Config
	mu     sync.Mutex
	client *gosmtp.Client
	conn   net.Conn // client's connection
}

// NewRelay validates the configuration.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
		return nil, fmt.Errorf("relay URL must be smtp://[user:pass@]host:port or smtps://… (percent-encode a / @ or : in the user or password), got %q",
			withoutPassword(cfg.URL))
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), map[string]string{"smtp": "587", "smtps": "465"}[u.Scheme])
	}
	tc := &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		if tc.RootCAs, err = SystemRootsAnd(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("relay CA file: %w", err)
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Minute
	}
	if cfg.Hostname == "" {
		cfg.Hostname = "localhost"
	}
	return &Relay{cfg: cfg, u: u, tls: tc}, nil
}

// SystemRootsAnd is the system's CA certificates plus those of the PEM
// file at path (SSL_CERT_FILE still works for the former).
func SystemRootsAnd(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no certificate", path)
	}
	return pool, nil
}

// withoutPassword is a relay URL that did not parse, fit to show: the
// password (between the user's ':' and the last '@' of the authority)
// becomes "…". The URL did not parse, so it is cut by hand.
func withoutPassword(raw string) string {
	rest := raw
	if _, after, ok := strings.Cut(raw, "://"); ok {
		rest = after
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return raw
	}
	return raw[:len(raw)-len(rest)] + user + ":…" + rest[at:]
}

// Send submits raw from `from` to rcpts. It returns one reply per
// recipient and, when the relay accepted the data, its final 250 text
// (where SES-style relays put the Message-ID they assigned); it is
// outbound.Relay's Send.
func (r *Relay) Send(ctx context.Context, from string, rcpts []string, raw []byte) ([]store.RelayReply, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cut := &cutter{}
	defer context.AfterFunc(ctx, cut.fire)()
	results, text, err := r.send(ctx, cut, from, rcpts, raw)
	if err != nil {
		// A broken connection is not reused; everything not yet answered
		// is temporary.
		if r.client != nil {
			r.client.Close()
			r.client = nil
		}
		retryUnanswered(results, err.Error())
	}
	return results, text
}

// retryUnanswered makes temporary, with msg, every recipient a broken
// connection left without a final answer: none yet, or a 250 to RCPT
// whose DATA never got its reply.
func retryUnanswered(results []store.RelayReply, msg string) {
	for i := range results {
		if results[i].Code == 0 || results[i].Code/100 == 2 {
			results[i] = store.RelayReply{Message: msg}
		}
	}
}

func (r *Relay) send(ctx context.Context, cut *cutter, from string, rcpts []string, raw []byte) ([]store.RelayReply, string, error) {
	results := make([]store.RelayReply, len(rcpts))
	c, err := r.connect(ctx, cut)
	if err != nil {
		return results, "", err
	}
	if err := c.Reset(); err != nil { // a reused connection may have timed out
		c.Close()
		r.client = nil
		if c, err = r.connect(ctx, cut); err != nil {
			return results, "", err
		}
	}
	return transact(c, from, rcpts, raw, cut.seal)
}

// cutter closes a connection when its context ends, so that a stop does
// not wait out a server's timeouts, until it is sealed. Once the final
// dot of DATA is sent the server may have the message, and cutting then
// would have it delivered twice: the wait for its reply is left to the
// timeouts.
type cutter struct {
	mu            sync.Mutex
	conn          net.Conn
	fired, sealed bool
}

// use makes conn the connection to cut (at once when the context has
// ended already).
func (c *cutter) use(conn net.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = conn
	if c.fired && !c.sealed {
		conn.Close()
	}
}

// fire is what the context's end calls.
func (c *cutter) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fired = true
	if c.conn != nil && !c.sealed {
		c.conn.Close()
	}
}

// seal leaves the connection alone from now on.
func (c *cutter) seal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed = true
}

// transact runs one mail transaction on c: MAIL, a RCPT per recipient,
// DATA. It answers each recipient with the server's reply (250 and the
// DATA reply's text once accepted), and that final text; err is a broken
// connection, with results holding what was answered before it.
//
// seal is called just before the final dot, past which the transaction
// must not be cut (cutter).
func transact(c *gosmtp.Client, from string, rcpts []string, raw []byte, seal func()) ([]store.RelayReply, string, error) {
	results := make([]store.RelayReply, len(rcpts))
	// The sender stays as the inbox is named, in From: too: inbound mail
	// finds an inbox by that name, and a bounce to its A-label would not.
	envelope := make([]string, len(rcpts))
	for i, r := range rcpts {
		envelope[i] = envelopeAddr(r)
	}
	offered, _ := c.Extension("SMTPUTF8")
	var opts *gosmtp.MailOptions
	switch {
	case !isASCII(from) || slices.ContainsFunc(envelope, func(r string) bool { return !isASCII(r) }):
		if !offered {
			// RFC 6531 §3.2: an address beyond ASCII is not sent to a
			// server that does not take it; retrying would not help.
			for i := range results {
				results[i] = store.RelayReply{Code: 553, Message: "5.6.7 the server does not offer SMTPUTF8, which addresses beyond ASCII need (RFC 6531)"}
			}
			return results, "", nil
		}
		opts = &gosmtp.MailOptions{UTF8: true}
	case offered && header8bit(raw):
		// Headers beyond ASCII go as they are either way (as they always
		// have), and say so where the server listens.
		opts = &gosmtp.MailOptions{UTF8: true}
	}
	if err := c.Mail(from, opts); err != nil {
		return fail(results, err)
	}
	accepted := 0
	for i, rcpt := range envelope {
		if err := c.Rcpt(rcpt, nil); err != nil {
			var se *gosmtp.SMTPError
			if !errors.As(err, &se) {
				return results, "", err
			}
			results[i] = store.RelayReply{Code: se.Code, Message: smtpText(se)}
			continue
		}
		results[i] = store.RelayReply{Code: 250, Message: "accepted"}
		accepted++
	}
	if accepted == 0 {
		return results, "", nil
	}
	w, err := c.Data()
	if err != nil {
		return failAccepted(results, err)
	}
	if _, err := w.Write(raw); err != nil {
		return results, "", err
	}
	seal()
	resp, err := w.CloseWithResponse()
	if err != nil {
		return failAccepted(results, err)
	}
	for i := range results {
		if results[i].Code == 250 {
			results[i].Message = resp.StatusText
		}
	}
	return results, resp.StatusText, nil
}

// envelopeAddr is a recipient as RCPT TO carries it: with an ASCII local
// part, a domain beyond ASCII goes as its A-label (RFC 5891), so that
// only a local part beyond ASCII needs SMTPUTF8.
func envelopeAddr(addr string) string {
	i := strings.LastIndexByte(addr, '@')
	if i < 0 || isASCII(addr) || !isASCII(addr[:i]) {
		return addr
	}
	if d, err := idna.Lookup.ToASCII(addr[i+1:]); err == nil {
		return addr[:i+1] + d
	}
	return addr
}

// header8bit reports bytes beyond ASCII in raw's header section, which
// ends at its first empty line (CRLF or bare LF, as clients send).
func header8bit(raw []byte) bool {
	for len(raw) > 0 {
		line, rest, _ := bytes.Cut(raw, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			return false
		}
		if !isASCII(line) {
			return true
		}
		raw = rest
	}
	return false
}

func isASCII[T string | []byte](s T) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// fail answers every recipient with the relay's reply to MAIL FROM.
func fail(results []store.RelayReply, err error) ([]store.RelayReply, string, error) {
	var se *gosmtp.SMTPError
	if !errors.As(err, &se) {
		return results, "", err
	}
	for i := range results {
		results[i] = store.RelayReply{Code: se.Code, Message: smtpText(se)}
	}
	return results, "", nil
}

// failAccepted answers the accepted recipients with the reply to DATA.
func failAccepted(results []store.RelayReply, err error) ([]store.RelayReply, string, error) {
	var se *gosmtp.SMTPError
	if !errors.As(err, &se) {
		return results, "", err
	}
	for i := range results {
		if results[i].Code == 250 {
			results[i] = store.RelayReply{Code: se.Code, Message: smtpText(se)}
		}
	}
	return results, "", nil
}

func smtpText(se *gosmtp.SMTPError) string {
	if se.EnhancedCode != (gosmtp.EnhancedCode{}) && se.EnhancedCode != gosmtp.NoEnhancedCode {
		return fmt.Sprintf("%d.%d.%d %s", se.EnhancedCode[0], se.EnhancedCode[1], se.EnhancedCode[2], se.Message)
	}
	return se.Message
}

// connect returns the open connection or dials, secures and authenticates
// a new one, either cut by cut.
func (r *Relay) connect(ctx context.Context, cut *cutter) (*gosmtp.Client, error) {
	if r.client != nil {
		cut.use(r.conn)
		return r.client, nil
	}
	d := &net.Dialer{Timeout: r.cfg.Timeout}
	dialContext := d.DialContext
	if r.u.Scheme == "smtps" {
		dialContext = (&tls.Dialer{NetDialer: d, Config: r.tls}).DialContext
	}
	dial := func() (net.Conn, error) {
		conn, err := dialContext(ctx, "tcp", r.u.Host)
		if err != nil {
			return nil, fmt.Errorf("dial relay: %w", err)
		}
		cut.use(conn)
		return conn, nil
	}
	conn, err := dial()
	if err != nil {
		return nil, err
	}
	var c *gosmtp.Client
	switch {
	case r.u.Scheme == "smtps":
		c, err = open(conn, nil, r.cfg.Hostname, r.cfg.Timeout)
	case r.cfg.Insecure:
		// A plaintext relay is allowed, not chosen: STARTTLS when the
		// relay offers it keeps the credentials and the mail out of
		// clear text, as opportunistic TLS between mail servers does.
		tc := r.tls.Clone()
		tc.InsecureSkipVerify = true
		c, conn, err = startTLSOrPlain(conn, tc, r.cfg.Hostname, r.cfg.Timeout, dial)
	default:
		// STARTTLS is required and the certificate verified.
		if c, err = open(conn, r.tls, r.cfg.Hostname, r.cfg.Timeout); err != nil {
			return nil, fmt.Errorf("relay %w (smtps:// or --relay-insecure for a relay without STARTTLS, --relay-ca-file for a private CA)", err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("relay %w", err)
	}
	if r.u.User != nil {
		pass, _ := r.u.User.Password()
		var auth sasl.Client
		if c.SupportsAuth(sasl.Plain) {
			auth = sasl.NewPlainClient("", r.u.User.Username(), pass)
		} else {
			auth = sasl.NewLoginClient(r.u.User.Username(), pass)
		}
		if err := c.Auth(auth); err != nil {
			c.Close()
			return nil, fmt.Errorf("relay AUTH: %w", err)
		}
	}
	r.client, r.conn = c, conn
	return c, nil
}

// Close closes the pooled connection.
func (r *Relay) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client == nil {
		return nil
	}
	err := r.client.Quit()
	if err != nil {
		r.client.Close() // Quit closes only on its 221
	}
	r.client, r.conn = nil, nil
	return err
}
