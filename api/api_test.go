package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/corpus"
	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
	"github.com/prometheus/client_golang/prometheus"
)

// clock is the tests' injectable clock (corpus.Clock).
type clock = corpus.Clock

type env struct {
	t      testing.TB
	db     *store.DB
	boot   store.Bootstrapped
	srv    *httptest.Server
	clock  *clock
	admin  string // admin token
	dbPath string // of the database file
}

// newEnv starts a real store (with its writer) and the API on a loopback
// HTTP server.
func newEnv(t testing.TB, cfg Config, opts ...func(*store.Options)) *env {
	t.Helper()
	return newEnvWith(t, cfg, app.Config{}, opts...)
}

// newEnvWith is newEnv with the operations configured by ac (its clock,
// logger and drain default to the API's).
func newEnvWith(t testing.TB, cfg Config, ac app.Config, opts ...func(*store.Options)) *env {
	t.Helper()
	ctx := context.Background()
	clk := corpus.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	o := store.Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range opts {
		f(&o)
	}
	db, err := store.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	boot, _, err := db.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); db.Run(runCtx) }()
	if cfg.Now == nil {
		cfg.Now = clk.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry() // as the server does without --metrics-addr
	}
	if ac.Now == nil {
		ac.Now = cfg.Now
	}
	if ac.Logger == nil {
		ac.Logger = cfg.Logger
	}
	if ac.Draining == nil {
		ac.Draining = cfg.Draining
	}
	ops, err := app.New(ctx, db, ac)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(ops, cfg))
	t.Cleanup(func() {
		srv.Close()
		stop()
		<-done
		db.Close()
	})
	return &env{t: t, db: db, boot: boot, srv: srv, clock: clk, admin: boot.AdminToken, dbPath: o.Path}
}

// deliver ingests raw mail into an inbox through the real ingest path and
// returns the message and thread ids.
func (e *env) deliver(inboxID, raw string) store.Delivered {
	e.t.Helper()
	d, err := e.db.Ingest(context.Background(), &store.Incoming{
		Raw: []byte(raw), Trace: []byte("Received: from test\r\n"), Parsed: message.Parse([]byte(raw)),
		Envelope: store.Envelope{MailFrom: "sender@example.com", RcptTo: []string{"inbox@localhost"}, RemoteIP: "127.0.0.1", Helo: "test"},
		Targets:  []store.Target{{InboxID: inboxID}}, ReceivedAt: e.clock.Now(),
	})
	if err != nil || len(d) != 1 {
		e.t.Fatalf("deliver: %+v %v", d, err)
	}
	e.clock.Advance(time.Millisecond) // distinct created_at, as in real life
	return d[0]
}

func (e *env) path(format string, args ...any) string {
	return "/v1/projects/" + e.boot.ProjectID + fmt.Sprintf(format, args...)
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, r.body)
	}
	return v
}

func (e *env) do(token, method, path, body string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *env) get(token, path string) response { return e.do(token, "GET", path, "") }

// key creates an API key with scopes (and optionally inboxes).
func (e *env) key(scopes []string, inboxes []string) string {
	e.t.Helper()
	_, tok, err := e.db.CreateKey(context.Background(), e.boot.ProjectID, "test", scopes, inboxes)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

func rawMail(id, subject, body string, headers ...string) string {
	return fmt.Sprintf("From: Sender <sender@example.com>\r\nTo: inbox@localhost\r\nMessage-ID: <%s>\r\nSubject: %s\r\n%s\r\n%s\r\n",
		id, subject, strings.Join(headers, ""), body)
}

func TestOrderingStory(t *testing.T) {
	e := newEnv(t, Config{})
	req := e.deliver(e.boot.Inbox.ID, rawMail("req@example.com", "Order 100 chairs", "Please send 100 chairs."))
	cor := e.deliver(e.boot.Inbox.ID, rawMail("cor@example.com", "Correction", "Make that 120 chairs.", "In-Reply-To: <req@example.com>\r\n"))
	if cor.ThreadID != req.ThreadID {
		t.Fatalf("correction not threaded")
	}
	feed := e.get(e.admin, e.path("/inboxes/%s/messages", e.boot.Inbox.ID)).json(t)["data"].([]any)
	if len(feed) != 2 || feed[0].(map[string]any)["id"] != cor.MessageID || feed[1].(map[string]any)["id"] != req.MessageID {
		t.Fatalf("inbox feed is not newest first: %v", feed)
	}
	if _, ok := feed[0].(map[string]any)["sequence"]; ok {
		t.Errorf("sequence shown outside the thread-messages route")
	}
	th := e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages", e.boot.Inbox.ID, req.ThreadID)).json(t)["data"].([]any)
	if len(th) != 2 || th[0].(map[string]any)["id"] != req.MessageID || th[0].(map[string]any)["sequence"] != 1.0 ||
		th[1].(map[string]any)["sequence"] != 2.0 {
		t.Fatalf("thread route is not in sequence order: %v", th)
	}
	if v, ok := th[0].(map[string]any)["delivery_status"]; !ok || v != nil {
		t.Errorf("delivery_status must be present and null for inbound: %v", v)
	}
}

const multipartHeader = "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=x\r\n"

// withPDF is a multipart/mixed body (use with multipartHeader) with a text
// part and a small PDF attachment.
const withPDF = "--x\r\nContent-Type: text/plain\r\n\r\nQuote attached.\r\n" +
	"--x\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=q.pdf\r\n\r\n%PDF-1.4 tiny\r\n--x--"

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
