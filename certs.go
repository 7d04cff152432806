package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/inboxd/inboxd/smtp"
)

// certs is where the server's TLS certificates come from (SPEC §13):
// --tls-cert/--tls-key files, ACME (--acme-domain, through autocert), or
// a generated self-signed one for tests (--smtp-tls-self-signed, SMTP
// only). The one GetCertificate serves HTTPS, SMTP STARTTLS and
// --smtps-addr alike; it counts and logs what fails and never panics.
type certs struct {
	log *slog.Logger
	// acme is nil without --acme-domain; domains[0] is the default name.
	acme    *autocert.Manager
	domains []string
	static  atomic.Pointer[tls.Certificate]
	// files are --tls-cert and --tls-key, read again when they change
	// (a renewal by certbot or the like needs no restart); nil otherwise.
	files *certFiles

	errors prometheus.Counter
	expiry atomic.Int64 // NotAfter (Unix seconds) of the last certificate served

	// After an ACME failure, handshakes get the error at once until
	// retryAt instead of each starting an order of its own: a CA counts
	// failed validations (Let's Encrypt allows 5 an hour) and scanners
	// handshake all day.
	mu      sync.Mutex
	retryAt time.Time
	backoff time.Duration
	lastErr error
}

// acmeBackoff bounds the wait after a failed ACME order.
const (
	acmeBackoffMin = time.Minute
	acmeBackoffMax = time.Hour
)

func newCerts(c Config, log *slog.Logger, reg prometheus.Registerer) (*certs, error) {
	s := &certs{log: log, domains: c.ACMEDomains,
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "inboxd_tls_certificate_errors_total",
			Help: "TLS handshakes that found no certificate to serve: an ACME order that failed, an unreadable cache."}),
	}
	reg.MustRegister(s.errors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "inboxd_tls_certificate_expiry_timestamp_seconds",
		Help: "When the certificate last served expires (Unix time); 0 before the first.",
	}, func() float64 { return float64(s.expiry.Load()) }))
	switch {
	case c.TLSCert != "":
		s.files = &certFiles{cert: c.TLSCert, key: c.TLSKey}
		if err := s.reload(); err != nil {
			return nil, fmt.Errorf("load TLS certificate: %w", err)
		}
	case len(c.ACMEDomains) > 0:
		client := &acme.Client{DirectoryURL: c.ACMEDirectory, UserAgent: "inboxd/" + strings.Fields(buildVersion())[0]}
		if c.ACMECAFile != "" {
			pem, err := os.ReadFile(c.ACMECAFile)
			if err != nil {
				return nil, fmt.Errorf("--acme-ca-file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--acme-ca-file %s holds no PEM certificate", c.ACMECAFile)
			}
			client.HTTPClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{
				Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{RootCAs: pool}}}
		}
		s.acme = &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			Cache:      autocert.DirCache(filepath.Join(c.Data, "acme")),
			HostPolicy: autocert.HostWhitelist(c.ACMEDomains...),
			Email:      c.ACMEEmail,
			Client:     client,
		}
	case c.SMTPTLSSelfSigned:
		cfg, err := smtp.SelfSignedTLS(c.Hostname)
		if err != nil {
			return nil, err
		}
		s.static.Store(&cfg.Certificates[0])
	default:
		return nil, nil
	}
	if leaf := s.static.Load(); leaf != nil && leaf.Leaf != nil {
		s.expiry.Store(leaf.Leaf.NotAfter.Unix())
	}
	return s, nil
}

// certFiles remembers which versions of the two files the served
// certificate was read from.
type certFiles struct {
	cert, key string
	mu        sync.Mutex
	seen      [2]fileVersion // what the served certificate was read from
	failed    [2]fileVersion // what did not load: not tried again
}

// fileVersion tells versions of a file apart: a renewal replaces it
// (another inode) or rewrites it (another modification time).
type fileVersion struct{ fi os.FileInfo }

func (v fileVersion) same(w fileVersion) bool {
	return v.fi != nil && w.fi != nil && os.SameFile(v.fi, w.fi) && v.fi.ModTime().Equal(w.fi.ModTime()) && v.fi.Size() == w.fi.Size()
}

func versionOf(path string) (fileVersion, error) {
	fi, err := os.Stat(path)
	return fileVersion{fi}, err
}

func sameVersions(a, b [2]fileVersion) bool { return a[0].same(b[0]) && a[1].same(b[1]) }

// reload reads --tls-cert and --tls-key again when either changed since
// they were last read (a stat of each per handshake). A pair that does
// not load (a renewal half written, a key that does not match) is
// counted and logged once, and the certificate served until then stays
// until the files change again.
func (s *certs) reload() error {
	f := s.files
	f.mu.Lock()
	defer f.mu.Unlock()
	var now [2]fileVersion
	var err error
	for i, p := range []string{f.cert, f.key} {
		if now[i], err = versionOf(p); err != nil {
			break
		}
	}
	if err == nil && (sameVersions(now, f.seen) || sameVersions(now, f.failed)) {
		return nil
	}
	var cert tls.Certificate
	if err == nil {
		cert, err = tls.LoadX509KeyPair(f.cert, f.key)
	}
	if err != nil {
		f.failed = now
		if s.static.Load() != nil {
			s.errors.Inc()
			s.log.Warn("tls: --tls-cert/--tls-key changed but do not load; serving the certificate read before", "err", err)
		}
		return err
	}
	f.seen = now
	s.static.Store(&cert)
	s.expiry.Store(cert.Leaf.NotAfter.Unix())
	return nil
}

// HTTPS says the API and console are served over TLS: with files or
// ACME (the self-signed certificate is SMTP's alone). A nil certs (no
// TLS at all) says no.
func (s *certs) HTTPS() bool { return s != nil && (s.files != nil || s.acme != nil) }

// ACME says the certificates come from --acme-domain.
func (s *certs) ACME() bool { return s != nil && s.acme != nil }

// TLSConfig is the configuration of one listener (nil without TLS);
// withALPN adds HTTP/2 and, with ACME, the tls-alpn-01 challenge
// protocol.
func (s *certs) TLSConfig(withALPN bool) *tls.Config {
	if s == nil {
		return nil
	}
	cfg := &tls.Config{GetCertificate: s.GetCertificate, MinVersion: tls.VersionTLS12}
	if withALPN {
		cfg.NextProtos = []string{"h2", "http/1.1"}
		if s.acme != nil {
			cfg.NextProtos = append(cfg.NextProtos, acme.ALPNProto)
		}
	}
	return cfg
}

// GetCertificate is tls.Config's hook. With ACME, a client that sends no
// server name, an IP literal or a name not configured (an SMTP client
// that dialled the server by address, a scanner) gets the first
// --acme-domain's certificate; a CA's tls-alpn-01 probe names its domain
// and is answered by autocert itself.
func (s *certs) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if s.files != nil {
		s.reload() // a failure keeps the certificate that loaded last
	}
	if s.acme == nil {
		return s.static.Load(), nil
	}
	challenge := slices.Equal(hello.SupportedProtos, []string{acme.ALPNProto})
	if !challenge {
		name := strings.TrimSuffix(strings.ToLower(hello.ServerName), ".")
		if !slices.Contains(s.domains, name) {
			h := *hello
			h.ServerName = s.domains[0]
			hello = &h
		}
		if err := s.waitingToRetry(); err != nil {
			return nil, err
		}
	}
	cert, err := s.acme.GetCertificate(hello)
	if challenge {
		return cert, err
	}
	s.settle(err)
	if err != nil {
		return nil, err
	}
	if cert.Leaf != nil {
		s.expiry.Store(cert.Leaf.NotAfter.Unix())
	}
	return cert, nil
}

// waitingToRetry is the last error while a failed order's backoff lasts.
func (s *certs) waitingToRetry() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lastErr != nil && time.Now().Before(s.retryAt) {
		return s.lastErr
	}
	return nil
}

// settle counts and logs a failure and doubles the backoff; a success
// clears it.
func (s *certs) settle(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.lastErr, s.backoff = nil, 0
		return
	}
	s.errors.Inc()
	s.backoff = min(max(2*s.backoff, acmeBackoffMin), acmeBackoffMax)
	s.retryAt = time.Now().Add(s.backoff)
	s.lastErr = fmt.Errorf("no certificate for %s: %w (next attempt after %s)", s.domains[0], err, s.retryAt.Format(time.TimeOnly))
	s.log.Warn("tls: certificate", "domain", s.domains[0], "err", err, "retry_in", s.backoff)
}

// Obtain gets the ACME certificate now rather than at the first
// handshake, so that a misconfiguration shows in the log at start. It
// runs once the HTTPS listener serves (the CA's tls-alpn-01 probe
// connects to it) and its failure is only logged and counted.
func (s *certs) Obtain(ctx context.Context) {
	// A hello as Go's client sends it: ECDSA is fine.
	hello := &tls.ClientHelloInfo{ServerName: s.domains[0], CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := s.GetCertificate(hello); err == nil {
			s.log.Info("tls: certificate ready", "domain", s.domains[0], "expires", time.Unix(s.expiry.Load(), 0).UTC())
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// HTTPHandler is the --acme-http-addr listener's: ACME http-01 challenges
// and a redirect to HTTPS for everything else.
func (s *certs) HTTPHandler() http.Handler { return s.acme.HTTPHandler(nil) }

// listenACMEHTTP binds --acme-http-addr (port 80). Without the privilege
// to bind it the server still runs: tls-alpn-01 on the HTTPS listener
// is enough for the CA, so the failure is said once, with its reason,
// and there is no http-01 and no redirect.
func listenACMEHTTP(addr string, log *slog.Logger) net.Listener {
	if addr == "" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		reason := "in use or not allowed"
		if errors.Is(err, os.ErrPermission) {
			reason = "ports below 1024 need root or CAP_NET_BIND_SERVICE (AmbientCapabilities=CAP_NET_BIND_SERVICE in a systemd unit)"
		}
		log.Warn("acme: no http-01 challenges and no redirect to https: cannot listen on --acme-http-addr; tls-alpn-01 on the HTTPS listener still obtains certificates",
			"addr", addr, "reason", reason, "err", err)
		return nil
	}
	return l
}
