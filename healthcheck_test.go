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
