// Package app owns the use cases of inboxd that every surface offers (the
// REST API today, MCP and the web console next): who may do what (scopes,
// inbox-grant masking: a resource outside the grant answers exactly like a
// missing one), input validation, paging with signed cursors, and the
// store calls behind each operation. An operation takes the Caller and
// returns domain objects or an *Error with a code; a surface only decodes,
// calls and encodes, so no rule can differ between surfaces.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/inboxd/inboxd/store"
)

// Config configures the operations.
type Config struct {
	// Now is the clock (cursor expiry, the time of simulated mail);
	// time.Now when nil.
	Now func() time.Time
	// CheckWebhookURL, when set, refuses webhook URLs at registration
	// (--webhook-deny-private: webhook.CheckURL).
	CheckWebhookURL URLCheck
	// Logger is slog.Default() when nil.
	Logger *slog.Logger
	// Draining, once closed, says the server is shutting down: long-polls
	// answer at once with what there is, the answer an expired wait gives
	// (SPEC §13).
	Draining <-chan struct{}
	// Send configures sending (Send, Submit).
	Send SendConfig

	// PollWaiting, for tests, is called each time a long-poll is about to
	// wait for a commit.
	PollWaiting func()
	// Heartbeats are the background workers' signs of life: Ready fails
	// when one has been silent for longer than HeartbeatStale.
	Heartbeats []Heartbeat

	// EventScan, for tests, replaces the bound on the events one read of
	// the log examines (eventScan) when it is not 0.
	EventScan int
}

// App is the operations layer over one database. It holds nothing but
// its dependencies: any number of surfaces may share one.
type App struct {
	db     *store.DB
	now    func() time.Time
	log    *slog.Logger
	secret []byte // signs list cursors (cursor.go)

	draining    <-chan struct{} // long-polls (poll.go)
	pollWaiting func()
	eventScan   int      // events examined at most by one read of the log
	checkURL    URLCheck // nil: every http(s) URL is accepted
	send        SendConfig
	flight      inFlight // Idempotency-Keys whose first request runs (send.go)
	heartbeats  []Heartbeat
}

// Heartbeat names a background worker and when it last ran (wall clock).
type Heartbeat struct {
	Name string
	Last func() time.Time
}

// HeartbeatStale is how long a worker may be silent before readiness
// fails: its loop turns at least every 30 s, and one relay delivery may
// take a few minutes of timeouts.
const HeartbeatStale = 5 * time.Minute

// SendConfig configures the send path.
type SendConfig struct {
	// Outbound is where mail to addresses outside the gateway goes:
	// OutboundCapture (the default), OutboundRelay or OutboundDirect.
	Outbound        string
	MaxRecipients   int   // 100 when 0, as for SMTP
	MaxMessageBytes int64 // of the composed message; 25 MiB when 0
	// RelayRewritesMessageIDs is set when the relay replaces our
	// Message-IDs (--relay-message-id-pattern): a relayed send's id is then
	// final only once the relay answers. Otherwise the id the gateway
	// generated is final when the send is stored (SPEC §4).
	RelayRewritesMessageIDs bool
}

// New returns the operations over db, with the cursor secret it keeps.
func New(ctx context.Context, db *store.DB, cfg Config) (*App, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.EventScan == 0 {
		cfg.EventScan = eventScan
	}
	if cfg.Send.Outbound == "" {
		cfg.Send.Outbound = OutboundCapture
	}
	if cfg.Send.MaxRecipients == 0 {
		cfg.Send.MaxRecipients = 100
	}
	if cfg.Send.MaxMessageBytes == 0 {
		cfg.Send.MaxMessageBytes = 25 << 20
	}
	secret, err := db.CursorSecret(ctx)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return &App{db: db, now: cfg.Now, log: cfg.Logger, secret: secret, checkURL: cfg.CheckWebhookURL,
		draining: cfg.Draining, pollWaiting: cfg.PollWaiting, eventScan: cfg.EventScan, send: cfg.Send,
		flight: inFlight{keys: map[string]bool{}}, heartbeats: cfg.Heartbeats}, nil
}

// Decoder fills v from an operation's input: a request body, a tool's
// arguments. An operation calls it only after its scope and grant checks,
// so which error wins stays the same on every surface (scope, then the
// resource, then the input), and a caller learns nothing from the input
// errors of an operation it may not run.
type Decoder func(v any) error

// Ready checks that the database answers reads and is writable (the
// writer takes the write lock) and that every worker has run lately
// (readiness; /readyz and healthcheck). What is not ready is logged and
// answered as an ETemporarilyUnavailable: a stalled worker by name, the
// database's trouble without its detail.
func (a *App) Ready(ctx context.Context) error {
	err := a.db.Ping(ctx)
	if err == nil {
		err = a.db.Ready(ctx)
	}
	if err != nil {
		a.log.Error("ready: database", "err", err)
		return Errorf(ETemporarilyUnavailable, "Database is not available.")
	}
	for _, h := range a.heartbeats {
		if silent := time.Since(h.Last()); silent > HeartbeatStale {
			e := Errorf(ETemporarilyUnavailable, "The %s worker has not run for %s.", h.Name, silent.Round(time.Second))
			a.log.Error("ready: " + e.Message)
			return e
		}
	}
	return nil
}
