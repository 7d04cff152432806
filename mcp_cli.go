package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"

	"github.com/inboxd/inboxd/mcp"
)

// mcpCmd is `inboxd mcp`: a stdio MCP server for clients that only launch
// commands (Claude Desktop), forwarding to a running server's /mcp. The
// protocol owns stdout; the log goes to stderr.
func mcpCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.ReadCloser, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8025", "the running server's HTTP address (or its /mcp endpoint)")
	key := fs.String("key", "", "the API key the agent uses (its scopes and inboxes are all the agent gets)")
	level := fs.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if err := argCount(fs, ""); err != nil {
		return err
	}
	if *key == "" {
		return errors.New("inboxd mcp needs an API key: --key KEY or INBOXD_KEY")
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	err := mcp.Bridge(ctx, mcp.BridgeConfig{URL: *url, Key: *key, Version: version, Logger: log}, stdin, nopWriteCloser{stdout})
	if ctx.Err() != nil {
		return nil // stopped by a signal: as clean as the end of stdin
	}
	return err
}

// nopWriteCloser is a writer the bridge may close without closing it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
