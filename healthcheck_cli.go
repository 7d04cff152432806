package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// healthcheckCmd is `inboxd healthcheck`: the exit code of a container
// health check. It asks a running server's /readyz, which answers 200 only
// when the database takes writes and the server is not shutting down.
func healthcheckCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8025", "the server's HTTP address")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(*url, "/")+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
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
