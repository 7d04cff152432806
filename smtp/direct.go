package smtp

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/emersion/go-msgauth/dkim"
	gosmtp "github.com/emersion/go-smtp"
	"golang.org/x/net/idna"

	"github.com/inboxd/inboxd/store"
)

// DirectConfig configures --outbound direct: each recipient's domain is
// looked up in DNS and its mail handed to the domain's MX on port 25.
type DirectConfig struct {
	Hostname string        // our EHLO name (--hostname)
	Port     string        // "25" when empty; tests use another
	Resolver *net.Resolver // the system's when nil (--direct-resolver)
	// DKIM signs mail whose envelope sender's domain has a key here
	// (lowercase domain → key), SPEC §6.
	DKIM    map[string]DKIMKey
	Timeout time.Duration // per command; a minute when zero
}

// DKIMKey is a DKIM signing key and the selector its public half is
// published under (selector._domainkey.domain).
type DKIMKey struct {
	Selector string
	Signer   crypto.Signer
}

// LoadDKIMKey reads a PEM private key (RSA in PKCS #1 or PKCS #8,
// Ed25519 in PKCS #8) for signing.
func LoadDKIMKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("%s holds no PEM block", path)
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: not an RSA or Ed25519 private key: %w", path, err)
	}
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("%s: a %T key; DKIM signs with RSA or Ed25519", path, k)
}

// dkimHeaders are the header fields a signature covers (RFC 6376 §5.4.1),
// those a message has of them.
var dkimHeaders = []string{"From", "Reply-To", "Subject", "Date", "To", "Cc", "Message-ID", "In-Reply-To", "References",
	"MIME-Version", "Content-Type", "Content-Transfer-Encoding", "List-Unsubscribe", "List-Unsubscribe-Post"}

// Direct delivers to each recipient domain's mail exchangers (RFC 5321
// §5.1): it is outbound.Relay's Send for --outbound direct.
type Direct struct {
	cfg    DirectConfig
	dialer *net.Dialer
}

// NewDirect returns the direct transport.
func NewDirect(cfg DirectConfig) *Direct {
	if cfg.Port == "" {
		cfg.Port = "25"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Minute
	}
	if cfg.Hostname == "" {
		cfg.Hostname = "localhost"
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	return &Direct{cfg: cfg, dialer: &net.Dialer{Timeout: cfg.Timeout, Resolver: cfg.Resolver}}
}

// Close has nothing to close: every delivery has its own connection.
func (d *Direct) Close() error { return nil }

// Send signs raw when a DKIM key is configured for from's domain and
// hands it to each recipient domain's MX, one transaction per domain. It
// answers one reply per recipient; the text of a relay's final 250 (for
// --relay-message-id-pattern) has no meaning here and is "".
func (d *Direct) Send(ctx context.Context, from string, rcpts []string, raw []byte) ([]store.RelayReply, string) {
	results := make([]store.RelayReply, len(rcpts))
	signed, err := d.sign(from, raw)
	if err != nil {
		for i := range results {
			results[i] = store.RelayReply{Message: "DKIM signing: " + err.Error()}
		}
		return results, ""
	}
	var domains []string
	byDomain := map[string][]int{}
	for i, r := range rcpts {
		dom := store.DomainOf(r)
		if byDomain[dom] == nil {
			domains = append(domains, dom)
		}
		byDomain[dom] = append(byDomain[dom], i)
	}
	for _, dom := range domains {
		idx := byDomain[dom]
		sub := make([]string, len(idx))
		for j, i := range idx {
			sub[j] = rcpts[i]
		}
		for j, rep := range d.deliver(ctx, dom, from, sub, signed) {
			results[idx[j]] = rep
		}
	}
	return results, ""
}

// sign prepends a DKIM-Signature when from's domain has a key.
func (d *Direct) sign(from string, raw []byte) ([]byte, error) {
	dom := store.DomainOf(from)
	k, ok := d.cfg.DKIM[dom]
	if !ok {
		return raw, nil
	}
	var b bytes.Buffer
	err := dkim.Sign(&b, bytes.NewReader(raw), &dkim.SignOptions{Domain: dom, Selector: k.Selector, Signer: k.Signer,
		HeaderCanonicalization: dkim.CanonicalizationRelaxed, BodyCanonicalization: dkim.CanonicalizationRelaxed,
		HeaderKeys: dkimHeaders})
	if err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// deliver hands raw for rcpts, all of domain, to the domain's first MX
// that answers. A domain that does not exist, or that publishes a null MX
// (RFC 7505), is a permanent failure; a DNS failure, or no MX answering,
// a temporary one.
func (d *Direct) deliver(ctx context.Context, domain, from string, rcpts []string, raw []byte) []store.RelayReply {
	every := func(code int, text string) []store.RelayReply {
		out := make([]store.RelayReply, len(rcpts))
		for i := range out {
			out[i] = store.RelayReply{Code: code, Message: text}
		}
		return out
	}
	hosts, err := d.exchangers(ctx, domain)
	var perm *permanent
	switch {
	case errors.As(err, &perm):
		return every(perm.code, perm.text)
	case err != nil:
		return every(0, err.Error())
	}
	// A stop does not wait out a slow exchanger's timeouts (cutter).
	cut := &cutter{}
	defer context.AfterFunc(ctx, cut.fire)()
	var last error
	for _, h := range hosts {
		c, err := d.connect(ctx, cut, h)
		if err != nil {
			last = err
			continue // the next exchanger
		}
		results, _, err := transact(c, from, rcpts, raw, cut.seal)
		if err != nil {
			// The connection broke mid-transaction: what was not answered
			// for good is retried later (not at the next MX: the data may
			// have arrived).
			c.Close()
			retryUnanswered(results, fmt.Sprintf("%s: %v", h, err))
			return results
		}
		if err := c.Quit(); err != nil {
			c.Close() // Quit closes only on 221
		}
		return results
	}
	return every(0, fmt.Sprintf("no mail exchanger of %s answered: %v", domain, last))
}

// permanent is a lookup answer that no retry changes.
type permanent struct {
	code int
	text string
}

func (p *permanent) Error() string { return p.text }

// exchangers are domain's MX hosts in preference order or, with no MX
// record, the domain itself (its address records: RFC 5321 §5.1). A
// domain beyond ASCII is looked up by its A-label (RFC 5891); any other
// is looked up as it is.
func (d *Direct) exchangers(ctx context.Context, domain string) ([]string, error) {
	name := domain
	if !isASCII(domain) {
		var err error
		if name, err = idna.Lookup.ToASCII(domain); err != nil {
			return nil, &permanent{553, "5.1.2 " + domain + " is not a valid domain name"}
		}
	}
	mxs, err := d.cfg.Resolver.LookupMX(ctx, name)
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		if len(mxs) == 1 && (mxs[0].Host == "." || mxs[0].Host == "") {
			return nil, &permanent{556, "5.1.10 " + domain + " accepts no mail (null MX)"}
		}
		hosts := make([]string, 0, len(mxs))
		for _, mx := range mxs {
			hosts = append(hosts, strings.TrimSuffix(mx.Host, "."))
		}
		return hosts, nil
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		// No MX: the domain's own addresses, if it has any.
		if _, err := d.cfg.Resolver.LookupHost(ctx, name); err != nil {
			if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
				return nil, &permanent{550, "5.1.2 " + domain + " has no mail exchanger and no address"}
			}
			return nil, fmt.Errorf("looking up %s: %w", domain, err)
		}
		return []string{name}, nil
	}
	return nil, fmt.Errorf("looking up the MX of %s: %w", domain, err)
}

// connect opens an SMTP session with host, over STARTTLS when it offers
// it. TLS is opportunistic, as between mail servers without MTA-STS or
// DANE (startTLSOrPlain).
func (d *Direct) connect(ctx context.Context, cut *cutter, host string) (*gosmtp.Client, error) {
	addr := net.JoinHostPort(host, d.cfg.Port)
	conn, err := d.dial(ctx, cut, addr)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{ServerName: host, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	c, _, err := startTLSOrPlain(conn, tc, d.cfg.Hostname, d.cfg.Timeout, func() (net.Conn, error) { return d.dial(ctx, cut, addr) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", host, err)
	}
	return c, nil
}

// dial connects to addr, to be cut by cut.
func (d *Direct) dial(ctx context.Context, cut *cutter, addr string) (net.Conn, error) {
	conn, err := d.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	cut.use(conn)
	return conn, nil
}
