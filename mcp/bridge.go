package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BridgeConfig configures Bridge.
type BridgeConfig struct {
	URL     string // the running inboxd: its base URL, or its /mcp endpoint
	Key     string // an API key
	Version string // announced to the client
	Logger  *slog.Logger
	// HTTPClient reaches inboxd; http.DefaultTransport with the key when nil.
	HTTPClient *http.Client
}

// Bridge serves MCP over in and out (a process's stdin and stdout, for
// clients that only launch commands) by forwarding to a running inboxd:
// an SDK client of its /mcp over streamable HTTP, and a server that offers
// the tools it lists, with its instructions, each call handed on as it
// is and its result handed back as it is. So the tools, their checks and
// their fences are the server's own, whatever version the bridge is. It
// returns when in ends (nil: a clean exit) or ctx does; it fails at once
// when inboxd cannot be reached or refuses the key.
func Bridge(ctx context.Context, cfg BridgeConfig, in io.ReadCloser, out io.WriteCloser) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: withKey{key: cfg.Key, next: http.DefaultTransport}}
	}
	endpoint := strings.TrimRight(cfg.URL, "/")
	if !strings.HasSuffix(endpoint, "/mcp") {
		endpoint += "/mcp"
	}
	client := gomcp.NewClient(&gomcp.Implementation{Name: "inboxd-mcp-bridge", Version: cfg.Version}, &gomcp.ClientOptions{Logger: cfg.Logger})
	cs, err := client.Connect(ctx, &gomcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: cfg.HTTPClient,
		DisableStandaloneSSE: true}, nil)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	srv := gomcp.NewServer(&gomcp.Implementation{Name: init.ServerInfo.Name, Title: init.ServerInfo.Title, Version: init.ServerInfo.Version},
		&gomcp.ServerOptions{Instructions: init.Instructions, Logger: cfg.Logger, Capabilities: &gomcp.ServerCapabilities{Tools: &gomcp.ToolCapabilities{}}})
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the tools of %s: %w", endpoint, err)
		}
		name := t.Name
		srv.AddTool(t, func(ctx context.Context, req *gomcp.CallToolRequest) (*gomcp.CallToolResult, error) {
			return cs.CallTool(ctx, &gomcp.CallToolParams{Name: name, Arguments: req.Params.Arguments, Meta: req.Params.Meta})
		})
	}
	return srv.Run(ctx, &gomcp.IOTransport{Reader: in, Writer: out})
}

// withKey adds the API key to every request.
type withKey struct {
	key  string
	next http.RoundTripper
}

func (k withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.next.RoundTrip(r)
}
