package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// inboxd healthcheck succeeds against a ready server and fails, in one
// line, once it is gone.
func TestHealthcheck(t *testing.T) {
	s := startServer(t, t.TempDir())
	check := func() (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), []string{"healthcheck", "--url", "http://" + s.http}, func(string) string { return "" }, &out, io.Discard)
		return out.String(), err
	}
	if out, err := check(); err != nil || out != "ready\n" {
		t.Fatalf("ready server: %q %v", out, err)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := check(); err == nil || !strings.HasPrefix(err.Error(), "not ready: ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("stopped server: %v", err)
	}
}

// A server on HTTPS whose certificate names its host, not the loopback
// address a container's health check dials: --server-name and --ca-file
// verify it as that host.
func TestHealthcheckOverHTTPS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := writeCertFor(t, dir, "mail.example.com")
	s := startServer(t, t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile)
	check := func(extra ...string) error {
		args := append([]string{"healthcheck", "--url", "https://" + s.http}, extra...)
		return run(context.Background(), args, func(string) string { return "" }, io.Discard, io.Discard)
	}
	if err := check("--ca-file", certFile); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without --server-name: %v, want the certificate refused", err)
	}
	if err := check("--server-name", "mail.example.com", "--ca-file", certFile); err != nil {
		t.Errorf("with --server-name and --ca-file: %v", err)
	}
}
