package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/inboxd/inboxd/smtp"
)

// healthcheckCmd is `inboxd healthcheck`: the exit code of a container
// health check. It asks a running server's /readyz, which answers 200 only
// when the database takes writes and the server is not shutting down.
func healthcheckCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8025", "the server's HTTP address")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the answer")
	serverName := fs.String("server-name", "", "with an https:// URL: the name the server's certificate is for, when the URL names an address (https://127.0.0.1:443 of mail.example.com)")
	caFile := fs.String("ca-file", "", "with an https:// URL: CA certificates (PEM) to verify the server with, beside the system's")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if err := argCount(fs, ""); err != nil {
		return err
	}
	tc := &tls.Config{ServerName: *serverName, MinVersion: tls.VersionTLS12}
	if *caFile != "" {
		var err error
		if tc.RootCAs, err = smtp.SystemRootsAnd(*caFile); err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(*url, "/")+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("not ready: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: %s %s", resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintln(stdout, "ready")
	return nil
}
