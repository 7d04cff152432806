package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"
)

// writeCert writes a self-signed certificate for 127.0.0.1 and localhost
// to dir and returns its files and a pool that trusts it.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	return writeCertFor(t, dir, "localhost", net.IPv4(127, 0, 0, 1))
}

// writeCertFor writes a self-signed certificate for name (and ips).
func writeCertFor(t *testing.T, dir, name string, ips ...net.IP) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{name}, IPAddresses: ips,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// --tls-cert and --tls-key serve the API, console and /mcp over HTTPS
// (HTTP/2 negotiated) with the certificate SMTP's STARTTLS offers.
func TestHTTPSWithTLSCert(t *testing.T) {
	certFile, keyFile, pool := writeCert(t, t.TempDir())
	s := startServer(t, t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile)
	if s.srv.HTTPURL() != "https://"+s.http {
		t.Errorf("HTTPURL %s", s.srv.HTTPURL())
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	for _, path := range []string{"/healthz", "/"} {
		resp, err := client.Get("https://" + s.http + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
			t.Errorf("GET %s over HTTPS: %d %s", path, resp.StatusCode, resp.Proto)
		}
	}
	if resp, err := http.Get("http://" + s.http + "/healthz"); err == nil && resp.StatusCode == http.StatusOK {
		t.Error("plain HTTP answered 200 on the HTTPS listener")
	}
	c, err := gosmtp.DialStartTLS(s.smtp, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err == nil {
		err = c.Noop() // the handshake runs at the first command
		c.Close()
	}
	if err != nil {
		t.Fatalf("SMTP STARTTLS with the same certificate: %v", err)
	}
}

// A certificate renewed in place (certbot and the like replace the
// files) is served from the next handshake, with no restart; a pair
// that does not load keeps the one served before, and is counted.
func TestTLSCertFilesReloaded(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := writeCert(t, dir)
	s := startServer(t, t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile, "--metrics-addr", "127.0.0.1:0")
	served := func() *x509.Certificate {
		t.Helper()
		c, err := tls.Dial("tcp", s.http, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0]
	}
	first := served()
	if _, err := first.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost"}); err != nil {
		t.Fatal(err)
	}
	// A renewal: new files (another key and serial) in place of the old.
	renewed := t.TempDir()
	c2, k2, pool2 := writeCert(t, renewed)
	for _, f := range [][2]string{{c2, certFile}, {k2, keyFile}} {
		if err := os.Rename(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	second := served()
	if _, err := second.Verify(x509.VerifyOptions{Roots: pool2, DNSName: "localhost"}); err != nil || second.Equal(first) {
		t.Fatalf("after the renewal: the old certificate still served (%v)", err)
	}
	// A broken renewal: the key does not match; the last good pair stays.
	_, k3, _ := writeCert(t, t.TempDir())
	if err := os.Rename(k3, keyFile); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got := served(); !got.Equal(second) {
			t.Fatal("a pair that does not load replaced the served certificate")
		}
	}
	if n := scrape(t, "http://"+s.srv.MetricsAddr()+"/metrics")["inboxd_tls_certificate_errors_total"]; n != 1 {
		t.Errorf("inboxd_tls_certificate_errors_total %v, want 1 (counted once)", n)
	}
}
