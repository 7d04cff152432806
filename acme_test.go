package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/corpus"
)

const acmeDomain = "mail.inboxd.test"

// freePort is a loopback port free a moment ago, for a program that must
// be told its port before it starts (pebble's configuration names the
// ports it validates challenges on).
func freePort(t *testing.T) int {
	t.Helper()
	freePorts.Lock()
	defer freePorts.Unlock()
	for range 1000 {
		port := 20000 + rand.IntN(12000)
		if freePorts.given[port] {
			continue
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		u, err := net.ListenPacket("udp", addr) // the DNS port is UDP too
		if err != nil {
			continue
		}
		u.Close()
		freePorts.given[port] = true
		return port
	}
	t.Fatal("no free port in 20000-31999")
	return 0
}

// freePorts are the ports freePort handed out: it picks them below
// Linux's ephemeral range (32768-60999), where the kernel puts ":0"
// listeners and the local end of every outgoing connection. A port taken
// from that range and closed was once bound again by some connection of
// a test running beside this one before pebble or the server bound it.
var freePorts = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// pebbleCA is a real ACME server on loopback: Debian's pebble, with
// pebble-challtestsrv as its DNS answering every name with 127.0.0.1.
type pebbleCA struct {
	directory string // the ACME directory URL
	caFile    string // the PEM that verifies the directory's own HTTPS
	stop      func()
	// roots fetches pebble's issuing root (what its certificates chain
	// to) from its management listener.
	roots func() *x509.CertPool
}

// startPebble runs pebble validating tls-alpn-01 on tlsPort and http-01
// on httpPort of whatever the test's name resolves to (127.0.0.1).
func startPebble(t *testing.T, tlsPort, httpPort int) *pebbleCA {
	t.Helper()
	bins := map[string]string{}
	for _, name := range []string{"pebble", "pebble-challtestsrv"} {
		p, err := exec.LookPath(name)
		if err != nil {
			corpus.SkipOrFail(t, name+" not installed (apt-get install pebble)")
		}
		bins[name] = p
	}
	dir := t.TempDir()
	certFile, keyFile, pool := writeCert(t, dir)
	dns, listen, mgmt, dnsMgmt := freePort(t), freePort(t), freePort(t), freePort(t)
	cfg := fmt.Sprintf(`{"pebble":{"listenAddress":"127.0.0.1:%d","managementListenAddress":"127.0.0.1:%d",
		"certificate":%q,"privateKey":%q,"httpPort":%d,"tlsPort":%d,"ocspResponderURL":"","externalAccountBindingRequired":false}}`,
		listen, mgmt, certFile, keyFile, httpPort, tlsPort)
	cfgFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(ready string, name string, args ...string) func() {
		out := newSyncBuffer("")
		cmd := exec.Command(bins[name], args...)
		cmd.Stdout, cmd.Stderr = out, out
		// No random validation sleeps, no rejected nonces: the test's
		// time goes to the protocol, not to pebble's chaos.
		cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop := func() { cmd.Process.Kill(); cmd.Wait() }
		t.Cleanup(stop)
		out.await(t, regexp.QuoteMeta(ready))
		return stop
	}
	run("Starting challenge servers", "pebble-challtestsrv", "-dns01", "127.0.0.1:"+strconv.Itoa(dns),
		"-http01", "", "-https01", "", "-tlsalpn01", "", "-management", "127.0.0.1:"+strconv.Itoa(dnsMgmt),
		"-defaultIPv4", "127.0.0.1", "-defaultIPv6", "")
	stop := run("ACME directory available at", "pebble", "-config", cfgFile, "-dnsserver", "127.0.0.1:"+strconv.Itoa(dns))

	// pebble logs its management listener before it binds it, in a
	// goroutine of its own: ask for the root once pebble has served a
	// whole order, not at its start.
	roots := func() *x509.CertPool {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/roots/0", mgmt))
		if err != nil {
			t.Fatal(err)
		}
		pem, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		p := x509.NewCertPool()
		if err != nil || !p.AppendCertsFromPEM(pem) {
			t.Fatalf("pebble's root: %v %q", err, pem)
		}
		return p
	}
	return &pebbleCA{directory: fmt.Sprintf("https://127.0.0.1:%d/dir", listen), caFile: certFile, roots: roots, stop: stop}
}

// verifyDomain checks a connection's certificate is the ACME domain's,
// issued by pebble, whatever name the client sent (none, for an IP).
func verifyDomain(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: acmeDomain, Roots: roots, Intermediates: inter})
		return err
	}
}

// --acme-domain against a real ACME server: the certificate is obtained
// over tls-alpn-01 on the HTTPS listener, serves HTTPS (HTTP/2), SMTP
// STARTTLS and --smtps-addr, goes to a client that names no server (an
// IP literal) too, the http-01 listener redirects to HTTPS, and after a
// restart with the CA gone the certificate comes from <data>/acme.
func TestACMEWithPebble(t *testing.T) {
	httpsPort, http01Port := freePort(t), freePort(t)
	ca := startPebble(t, httpsPort, http01Port)
	data := t.TempDir()
	args := []string{"--acme-domain", acmeDomain, "--acme-directory", ca.directory, "--acme-ca-file", ca.caFile,
		"--acme-email", "ops@inboxd.test", "--http-addr", "127.0.0.1:" + strconv.Itoa(httpsPort),
		"--acme-http-addr", "127.0.0.1:" + strconv.Itoa(http01Port), "--smtps-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}
	s := startServer(t, data, args...)
	s.stderr.await(t, `msg="tls: certificate ready" domain=`+regexp.QuoteMeta(acmeDomain))
	roots := ca.roots()
	if got, want := s.srv.HTTPURL(), "https://"+acmeDomain+":"+strconv.Itoa(httpsPort); got != want {
		t.Errorf("HTTPURL %s, want %s", got, want)
	}

	checkServed := func(s *running) {
		t.Helper()
		// HTTPS by name, verified against pebble's root.
		dialer := &net.Dialer{}
		hc := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true,
			TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: acmeDomain},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, s.http)
			}}}
		resp, err := hc.Get("https://" + acmeDomain + "/healthz")
		if err != nil {
			t.Fatalf("HTTPS with the ACME certificate: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
			t.Errorf("GET /healthz: %d %s", resp.StatusCode, resp.Proto)
		}
		// SMTP STARTTLS by name, and with no name at all.
		for _, cfg := range []*tls.Config{
			{RootCAs: roots, ServerName: acmeDomain},
			{InsecureSkipVerify: true, VerifyConnection: verifyDomain(roots)},
		} {
			c, err := gosmtp.DialStartTLS(s.smtp, cfg)
			if err == nil {
				err = c.Noop() // the handshake runs at the first command
				c.Close()
			}
			if err != nil {
				t.Fatalf("SMTP STARTTLS (server name %q): %v", cfg.ServerName, err)
			}
		}
		// Implicit TLS dialled by IP: Go sends no SNI for an IP literal.
		conn, err := tls.Dial("tcp", s.srv.SMTPSAddr(), &tls.Config{InsecureSkipVerify: true, VerifyConnection: verifyDomain(roots)})
		if err != nil {
			t.Fatalf("SMTPS without SNI: %v", err)
		}
		conn.Close()
	}
	checkServed(s)

	// Port 80's part: everything that is not a challenge goes to HTTPS.
	req, _ := http.NewRequest("GET", "http://127.0.0.1:"+strconv.Itoa(http01Port)+"/console/x?y=1", nil)
	req.Host = acmeDomain
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "https://"+acmeDomain+"/console/x?y=1" {
		t.Errorf("http-01 listener: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	m := scrape(t, "http://"+s.srv.MetricsAddr()+"/metrics")
	if n := m["inboxd_tls_certificate_errors_total"]; n != 0 {
		t.Errorf("certificate errors %v", n)
	}
	if exp := m["inboxd_tls_certificate_expiry_timestamp_seconds"]; exp < float64(time.Now().Add(24*time.Hour).Unix()) {
		t.Errorf("certificate expiry %v", exp)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	// The CA gone, a restart serves the cached certificate.
	ca.stop()
	if _, err := os.Stat(filepath.Join(data, "acme", acmeDomain)); err != nil {
		t.Errorf("certificate cache: %v", err)
	}
	checkServed(startServer(t, data, args...))
}

// A CA that cannot be reached costs TLS, not the server: the failure is
// logged and counted once, handshakes during the backoff get the error
// without a new order, and plain SMTP and HTTPS's listener keep running.
func TestACMEFailureIsCountedNotFatal(t *testing.T) {
	dead := freePort(t) // nothing listens: the directory is unreachable
	s := startServer(t, t.TempDir(), "--acme-domain", acmeDomain, "--acme-directory", fmt.Sprintf("https://127.0.0.1:%d/dir", dead),
		"--acme-http-addr", "", "--metrics-addr", "127.0.0.1:0")
	s.stderr.await(t, `msg="tls: certificate" domain=`+regexp.QuoteMeta(acmeDomain)+` err=.* retry_in=1m0s`)
	for range 3 {
		c, err := gosmtp.DialStartTLS(s.smtp, &tls.Config{ServerName: acmeDomain, InsecureSkipVerify: true})
		if err == nil {
			err = c.Noop() // the handshake runs at the first command
			c.Close()
		}
		if err == nil {
			t.Fatal("STARTTLS without a certificate succeeded")
		}
	}
	if err := sendMail(s.smtp, "a@example.com", []string{"inbox@localhost"}, "Subject: plain\r\n\r\nstill works\r\n"); err != nil {
		t.Fatalf("plain SMTP after the CA failed: %v", err)
	}
	if n := strings.Count(s.stderr.String(), `msg="tls: certificate"`); n != 1 {
		t.Errorf("%d failures logged during the backoff, want 1:\n%s", n, s.stderr.String())
	}
	if got := scrape(t, "http://"+s.srv.MetricsAddr()+"/metrics")["inboxd_tls_certificate_errors_total"]; got != 1 {
		t.Errorf("inboxd_tls_certificate_errors_total %v, want 1", got)
	}
}

// With --acme-domain the HTTPS listener defaults to :443 (where a CA
// probes tls-alpn-01) and the SMTP greeting to the domain; what is set
// explicitly, by flag or environment, wins. A name a CA cannot certify
// is refused before anything starts.
func TestACMEDefaults(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		env            map[string]string
		http, hostname string
		err            string
	}{
		{args: []string{"--acme-domain", "Mail.Example.com"}, http: ":443", hostname: "mail.example.com"},
		{args: []string{"--acme-domain", "mail.example.com", "--http-addr", "127.0.0.1:8443", "--hostname", "mx.example.com"}, http: "127.0.0.1:8443", hostname: "mx.example.com"},
		{args: []string{"--acme-domain", "mail.example.com"}, env: map[string]string{"INBOXD_HTTP_ADDR": "10.0.0.1:443"}, http: "10.0.0.1:443", hostname: "mail.example.com"},
		{args: []string{"--acme-domain", "localhost"}, err: "fully qualified domain name"},
		{args: []string{"--acme-domain", "192.0.2.1"}, err: "fully qualified domain name"},
		{args: []string{"--acme-domain", "mail.example.com", "--smtp-tls-self-signed"}, err: "choose one source"},
	} {
		c, _, err := serveConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case c.HTTPAddr != tc.http || c.Hostname != tc.hostname:
			t.Errorf("%v %v: http %s hostname %s, want %s %s", tc.args, tc.env, c.HTTPAddr, c.Hostname, tc.http, tc.hostname)
		}
	}
}

// Port 80 taken (or not allowed): the server says why and runs on with
// tls-alpn-01 alone.
func TestACMEWithoutPort80(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	s := startServer(t, t.TempDir(), "--acme-domain", acmeDomain, "--acme-directory", fmt.Sprintf("https://127.0.0.1:%d/dir", freePort(t)),
		"--acme-http-addr", taken.Addr().String())
	s.stderr.await(t, `msg="acme: no http-01 challenges and no redirect to https: .*" addr=`+regexp.QuoteMeta(taken.Addr().String()))
	if err := sendMail(s.smtp, "a@example.com", []string{"inbox@localhost"}, "Subject: plain\r\n\r\nruns\r\n"); err != nil {
		t.Fatal(err)
	}
}
