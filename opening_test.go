package main

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/smtp"
)

// While the database opens (a migration may take minutes), clients that
// connect are answered instead of left hanging: SMTP with 421 (over
// implicit TLS too), HTTP with 503 and Retry-After. Once stopped, the
// listeners serve the real servers.
func TestAnswerWhileOpening(t *testing.T) {
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	smtpLn, smtpsLn, httpLn := listen(), listen(), listen()
	cfg, err := smtp.SelfSignedTLS("localhost")
	if err != nil {
		t.Fatal(err)
	}
	stop := answerWhileOpening("mx.example.test", openingListener{l: smtpLn}, openingListener{l: smtpsLn, tls: cfg},
		openingListener{l: httpLn, http: true}, openingListener{})

	for _, dial := range []func() (*gosmtp.Client, error){
		func() (*gosmtp.Client, error) { return gosmtp.Dial(smtpLn.Addr().String()) },
		func() (*gosmtp.Client, error) {
			return gosmtp.DialTLS(smtpsLn.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		},
	} {
		c, err := dial()
		var se *gosmtp.SMTPError
		if err == nil {
			err = c.Hello("test.example") // the greeting is read at the first command
			c.Close()
		}
		if !errors.As(err, &se) || se.Code != 421 || !strings.Contains(se.Message, "opening its database") {
			t.Errorf("SMTP while opening: %v", err)
		}
	}
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := http.Get("http://" + httpLn.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get("/readyz"); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("HTTP while opening: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Liveness holds while opening: a probe must not restart a migration.
	if resp := get("/healthz"); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz while opening: %d, want 200", resp.StatusCode)
	}

	stop()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(httpLn)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + httpLn.Addr().String() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after stop: %d, want the real server's 200", resp.StatusCode)
	}
}
