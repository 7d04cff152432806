package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/corpus"
	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
)

// env is the console over a real store, on a loopback server; what it
// passes on (the API) answers 418, so a test sees what reached it.
type env struct {
	t        *testing.T
	db       *store.DB
	boot     store.Bootstrapped
	srv      *httptest.Server
	draining chan struct{}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := store.Open(ctx, store.Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Logger: quiet})
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
	draining := make(chan struct{})
	ops, err := app.New(ctx, db, app.Config{Logger: quiet, Draining: draining})
	if err != nil {
		t.Fatal(err)
	}
	c := New(ops, Config{Logger: quiet, Draining: draining, Heartbeat: time.Second})
	srv := httptest.NewServer(c.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})))
	t.Cleanup(func() {
		srv.Close()
		stop()
		<-done
		db.Close()
	})
	return &env{t: t, db: db, boot: boot, srv: srv, draining: draining}
}

// do makes a request with the given headers (and the session cookie
// when session is not "").
func (e *env) do(method, path, session, body string, headers ...string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if session != "" {
		req.AddCookie(&http.Cookie{Name: cookieName, Value: session})
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// signIn signs in with token and returns the session cookie's value.
func (e *env) signIn(token string) string {
	e.t.Helper()
	r := e.do("POST", "/console/session", "", `{"token":"`+token+`"}`, "Content-Type", "application/json")
	if r.StatusCode != http.StatusOK {
		e.t.Fatalf("sign-in: %d %s", r.StatusCode, readAll(e.t, r))
	}
	for _, c := range r.Cookies() {
		if c.Name == cookieName {
			return c.Value
		}
	}
	e.t.Fatal("sign-in set no session cookie")
	return ""
}

// deliver ingests raw mail into an inbox.
func (e *env) deliver(inboxID, raw string) store.Delivered {
	e.t.Helper()
	d, err := e.db.Ingest(context.Background(), &store.Incoming{
		Raw: []byte(raw), Trace: []byte("Received: from test\r\n"), Parsed: message.Parse([]byte(raw)),
		Envelope: store.Envelope{MailFrom: "a@example.com", RcptTo: []string{"inbox@localhost"}, RemoteIP: "127.0.0.1", Helo: "test"},
		Targets:  []store.Target{{InboxID: inboxID}}, ReceivedAt: time.Now(),
	})
	if err != nil || len(d) != 1 {
		e.t.Fatalf("deliver: %+v %v", d, err)
	}
	return d[0]
}

// Every console page and route answers with the strict policy: its own
// scripts only, no inline script or eval, framed by nobody; and the
// other safety headers. What is not the console's reaches the API.
func TestPageHeaders(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/", "/console/static/app.js", "/console/static/style.css", "/console/session", "/console/nope"} {
		r := e.do("GET", path, "", "")
		h := r.Header
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %s", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP %q allows inline script or eval", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	if r := e.do("GET", "/console/static/app.js", "", ""); !strings.HasPrefix(r.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js is %q", r.Header.Get("Content-Type"))
	}
	r := e.do("GET", "/", "", "")
	if etag := r.Header.Get("ETag"); etag == "" || e.do("GET", "/", "", "", "If-None-Match", etag).StatusCode != http.StatusNotModified {
		t.Errorf("index ETag %q does not revalidate", etag)
	}
	for _, path := range []string{"/v1/me", "/healthz", "/index.html"} {
		if r := e.do("GET", path, "", ""); r.StatusCode != http.StatusTeapot {
			t.Errorf("%s did not reach the API: %d", path, r.StatusCode)
		}
	}
}

// No page of the console holds inline script, an inline handler or a
// style attribute: the policy would refuse them, and the page would break.
func TestStaticFilesFitThePolicy(t *testing.T) {
	c := New(nil, Config{})
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|\son[a-z]+\s*=|\sstyle\s*=|javascript:`)
	for name, f := range c.static {
		if !strings.HasSuffix(name, ".html") {
			continue
		}
		if m := inline.FindString(string(f.body)); m != "" {
			t.Errorf("%s: %q", name, m)
		}
	}
	// Sender text is inserted as text: no script assigns HTML.
	html := regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function`)
	for name, f := range c.static {
		if strings.HasSuffix(name, ".js") {
			if m := html.FindString(string(f.body)); m != "" {
				t.Errorf("%s: %q", name, m)
			}
		}
	}
}

// Sign-in exchanges a key for an HttpOnly, SameSite=Strict cookie (Secure
// over HTTPS); a bad key gets none; sign-out ends the session.
func TestSignInAndOut(t *testing.T) {
	e := newEnv(t)
	if r := e.do("POST", "/console/session", "", `{"token":"inboxd_nope"}`); r.StatusCode != http.StatusUnauthorized || len(r.Cookies()) != 0 {
		t.Errorf("a bad key: %d %v", r.StatusCode, r.Cookies())
	}
	for _, https := range []bool{false, true} {
		headers := []string{"Content-Type", "application/json"}
		if https {
			headers = append(headers, "X-Forwarded-Proto", "https")
		}
		r := e.do("POST", "/console/session", "", `{"token":"`+e.boot.AdminToken+`"}`, headers...)
		var got sessionJSON
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil || r.StatusCode != http.StatusOK || got.KeyID != e.boot.AdminKey.ID {
			t.Fatalf("sign-in: %d %+v %v", r.StatusCode, got, err)
		}
		set := r.Header.Get("Set-Cookie")
		for _, want := range []string{cookieName + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
			if !strings.Contains(set, want) {
				t.Errorf("Set-Cookie %q lacks %s", set, want)
			}
		}
		if strings.Contains(set, "Secure") != https {
			t.Errorf("https %v: Set-Cookie %q", https, set)
		}
		if strings.Contains(set, e.boot.AdminToken) {
			t.Errorf("the cookie holds the API key: %q", set)
		}
	}
	id := e.signIn(e.boot.AdminToken)
	if r := e.do("GET", "/console/session", id, ""); r.StatusCode != http.StatusOK {
		t.Fatalf("session: %d", r.StatusCode)
	}
	// A page of another origin cannot sign the browser out (nor in).
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "http://evil.example"}, {"Sec-Fetch-Site", "same-site"}} {
		if r := e.do("DELETE", "/console/session", id, "", h...); r.StatusCode != http.StatusForbidden {
			t.Errorf("sign-out with %v: %d", h, r.StatusCode)
		}
	}
	r := e.do("DELETE", "/console/session", id, "", "Sec-Fetch-Site", "same-origin")
	if r.StatusCode != http.StatusOK || !strings.Contains(r.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("sign-out: %d %q", r.StatusCode, r.Header.Get("Set-Cookie"))
	}
	if r := e.do("GET", "/console/session", id, ""); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("after sign-out: %d", r.StatusCode)
	}
}

// Authenticate is the API's credential for the console: the session's
// caller, for a state-changing request only from the console's origin; a
// revoked key ends its sessions.
func TestAuthenticate(t *testing.T) {
	e := newEnv(t)
	c := New(nil, Config{})
	ops, err := app.New(context.Background(), e.db, app.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c.app = ops
	k, token, err := e.db.CreateKey(context.Background(), e.boot.ProjectID, "k", []string{"messages:read"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := e.signIn(token)
	req := func(method string, headers ...string) *http.Request {
		r := httptest.NewRequest(method, "http://console.test/v1/me", nil)
		r.AddCookie(&http.Cookie{Name: cookieName, Value: id})
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		return r
	}
	if got, _, err := c.Authenticate(req("GET", "Sec-Fetch-Site", "cross-site")); err != nil || got.ID != k.ID {
		t.Errorf("a GET: %+v %v", got, err)
	}
	if _, _, err := c.Authenticate(req("POST", "Sec-Fetch-Site", "same-origin")); err != nil {
		t.Errorf("a POST from the console: %v", err)
	}
	if _, _, err := c.Authenticate(req("POST", "Origin", "http://console.test")); err != nil {
		t.Errorf("a POST from the console's origin: %v", err)
	}
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}, {"Origin", "http://console.test:9999"}} {
		if _, _, err := c.Authenticate(req("DELETE", h...)); app.ErrorCode(err) != app.EPermissionDenied {
			t.Errorf("a DELETE with %v: %v", h, err)
		}
	}
	if _, _, err := c.Authenticate(httptest.NewRequest("GET", "/v1/me", nil)); err != app.ErrUnauthenticated {
		t.Errorf("no cookie: %v", err)
	}
	if err := e.db.RevokeKey(context.Background(), e.boot.ProjectID, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Authenticate(req("GET")); app.ErrorCode(err) != app.EUnauthenticated {
		t.Errorf("after the key's revocation: %v", err)
	}
}

// inlineMail is an HTML message with a cid: image, a remote image and a
// link.
const inlineMail = "From: a@example.com\r\nTo: inbox@localhost\r\nMessage-ID: <frame@x>\r\nSubject: frame\r\n" +
	"MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary=b\r\n\r\n" +
	"--b\r\nContent-Type: text/html\r\n\r\n<p>Hi <a href=\"https://example.com/\">there</a></p><img src=\"cid:logo@x\"><img src=\"https://t.example/p.gif\"><script>alert(1)</script>\r\n" +
	"--b\r\nContent-Type: image/gif\r\nContent-ID: <logo@x>\r\nContent-Transfer-Encoding: base64\r\n\r\nR0lGODlhAQABAAAAACw=\r\n--b--\r\n"

var inlineURL = regexp.MustCompile(`src="(/console/inline/[^/"]+/)([^"]+)"`)

// The frame is a sandboxed document that loads only the message's own
// inline images, through signed URLs that need no cookie; remote images
// load only when asked for.
func TestFrame(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, inlineMail)
	text := e.deliver(ib, "From: a@example.com\r\nMessage-ID: <t@x>\r\nSubject: t\r\n\r\nplain\r\n")
	id := e.signIn(e.boot.AdminToken)
	path := "/console/inboxes/" + ib + "/messages/" + d.MessageID + "/frame"
	if r := e.do("GET", path, "", ""); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a session: %d", r.StatusCode)
	}
	if r := e.do("GET", "/console/inboxes/"+ib+"/messages/"+text.MessageID+"/frame", id, ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("a message without HTML: %d", r.StatusCode)
	}
	r := e.do("GET", path, id, "")
	body := readAll(t, r)
	csp := r.Header.Get("Content-Security-Policy")
	m := inlineURL.FindStringSubmatch(body)
	if r.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("frame: %d %s", r.StatusCode, body)
	}
	host := strings.TrimPrefix(e.srv.URL, "http://")
	want := "sandbox allow-popups allow-popups-to-escape-sandbox; default-src 'none'; img-src http://" + host + m[1] + "; " +
		"style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'self' http://" + host
	if csp != want {
		t.Errorf("frame CSP\n got %s\nwant %s", csp, want)
	}
	if strings.Contains(body, "t.example") || strings.Contains(body, "<script") || !strings.Contains(body, `rel="nofollow noreferrer noopener"`) ||
		!strings.Contains(body, `<base target="_blank">`) {
		t.Errorf("frame body: %s", body)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Referrer-Policy") != "no-referrer" || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("frame headers: %v", r.Header)
	}
	// The image, with no cookie (the frame's origin is opaque).
	img := e.do("GET", m[1]+m[2], "", "")
	if b := readAll(t, img); img.StatusCode != http.StatusOK || !strings.HasPrefix(b, "GIF89a") || img.Header.Get("Content-Type") != "image/gif" {
		t.Errorf("inline image: %d %q %v", img.StatusCode, b, img.Header)
	}
	if r := e.do("GET", m[1][:len(m[1])-3]+"xx/"+m[2], "", ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("a tampered token: %d", r.StatusCode)
	}

	r = e.do("GET", path+"?images=remote", id, "")
	body = readAll(t, r)
	if !strings.Contains(body, `<img src="https://t.example/p.gif">`) || !strings.Contains(r.Header.Get("Content-Security-Policy"), m[1]+" https: http:;") ||
		strings.Contains(body, "<script") || !inlineURL.MatchString(body) {
		t.Errorf("with remote images: %s\n%s", r.Header.Get("Content-Security-Policy"), body)
	}
}

// A Host header that cannot stand in a policy leaves the frame no image
// source at all, not data: (SPEC §12: the message's own cid: images only).
func TestFrameCSPWithAnOddHost(t *testing.T) {
	r := httptest.NewRequest("GET", "/console/x", nil)
	r.Host = "a;b"
	for remote, want := range map[bool]string{false: "img-src 'none';", true: "img-src https: http:;"} {
		if csp := frameCSP(r, "/console/inline/t/", remote); !strings.Contains(csp, want) {
			t.Errorf("remote %v: %s", remote, csp)
		}
	}
}

// Every payload of the XSS corpus comes out of the frame, with and
// without remote images, as HTML in which a browser's parser finds
// nothing that runs (corpus.UnsafeHTML, as for the API's body route).
func TestFrameResistsXSSCorpus(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	id := e.signIn(e.boot.AdminToken)
	for i, p := range corpus.XSSPayloads() {
		d := e.deliver(ib, p.Message(fmt.Sprintf("xss%d@example.com", i)))
		for _, q := range []string{"", "?images=remote"} {
			r := e.do("GET", "/console/inboxes/"+ib+"/messages/"+d.MessageID+"/frame"+q, id, "")
			body := readAll(t, r)
			if r.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %s", p.Name, r.StatusCode, body)
			}
			// The frame's own head (meta, base, style) is ours; the mail
			// is the body.
			start, end := strings.Index(body, "<body>"), strings.LastIndex(body, "</body>")
			if start < 0 || end < start {
				t.Fatalf("%s: no body in %s", p.Name, body)
			}
			if bad := corpus.UnsafeHTML(body[start+len("<body>") : end]); len(bad) > 0 {
				t.Errorf("%s%s: %v\nsent   %s\nserved %s", p.Name, q, bad, p.HTML, body)
			}
		}
	}
}

// The event stream sends each event with its cursor as id, resumes after
// Last-Event-ID, and ends when the session does.
func TestEventStream(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	k, token, err := e.db.CreateKey(context.Background(), e.boot.ProjectID, "k", []string{"events:read"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := e.signIn(token)
	e.deliver(ib, "Message-ID: <before@x>\r\nSubject: b\r\n\r\nb\r\n") // before the stream: not sent
	type sse struct{ id, event, data string }
	open := func(lastID string) (<-chan sse, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/console/events", nil)
		req.AddCookie(&http.Cookie{Name: cookieName, Value: id})
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %v %v", resp, err)
		}
		ch := make(chan sse, 16)
		go func() {
			defer close(ch)
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			var cur sse
			for sc.Scan() {
				line := sc.Text()
				switch {
				case line == "":
					if cur.data != "" || cur.event != "" {
						ch <- cur
					}
					cur = sse{}
				case strings.HasPrefix(line, "id: "):
					cur.id = line[4:]
				case strings.HasPrefix(line, "event: "):
					cur.event = line[7:]
				case strings.HasPrefix(line, "data: "):
					cur.data = line[6:]
				}
			}
		}()
		return ch, cancel
	}
	next := func(ch <-chan sse) sse {
		t.Helper()
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10 s")
		}
		return sse{}
	}
	ch, cancel := open("")
	ready := next(ch)
	if ready.event != "ready" || ready.id == "" {
		t.Fatalf("the stream starts with %+v, want its position", ready)
	}
	first := e.deliver(ib, "Message-ID: <one@x>\r\nSubject: 1\r\n\r\n1\r\n")
	ev := next(ch)
	var env struct {
		Type string
		Data struct {
			MessageID string `json:"message_id"`
		}
	}
	if err := json.Unmarshal([]byte(ev.data), &env); err != nil || env.Type != "message.received" || env.Data.MessageID != first.MessageID || ev.id == "" {
		t.Fatalf("first event: %+v %v", ev, err)
	}
	cancel()
	// Mail that arrives while the browser is away comes with the resumed
	// stream, and nothing it saw comes again.
	second := e.deliver(ib, "Message-ID: <two@x>\r\nSubject: 2\r\n\r\n2\r\n")
	ch, cancel = open(ev.id)
	defer cancel()
	if r := next(ch); r.event != "ready" || r.id != ev.id {
		t.Fatalf("the resumed stream starts with %+v, want %s", r, ev.id)
	}
	if err := json.Unmarshal([]byte(next(ch).data), &env); err != nil || env.Data.MessageID != second.MessageID {
		t.Fatalf("resumed: %+v %v", env, err)
	}
	// Mail after the key's revocation wakes the stream's wait, and ends
	// it: the event is not sent.
	if err := e.db.RevokeKey(context.Background(), e.boot.ProjectID, k.ID); err != nil {
		t.Fatal(err)
	}
	e.deliver(ib, "Message-ID: <three@x>\r\nSubject: 3\r\n\r\n3\r\n")
	if ev := next(ch); ev.event != "ended" {
		t.Errorf("after the key's revocation: %+v", ev)
	}
	if _, ok := <-ch; ok {
		t.Error("the stream goes on after it ended")
	}
}

// A key without events:read gets no stream, with or without a cursor to
// resume from, and nothing of the cursor is echoed.
func TestEventStreamNeedsEventsRead(t *testing.T) {
	e := newEnv(t)
	_, token, err := e.db.CreateKey(context.Background(), e.boot.ProjectID, "k", []string{"inboxes:read"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := e.signIn(token)
	for _, q := range []string{"", "?after=x%0Aevent:%20injected%0Adata:%20%7B%7D%0A%0A"} {
		r := e.do("GET", "/console/events"+q, id, "")
		if b := readAll(t, r); r.StatusCode != http.StatusForbidden || strings.Contains(b, "injected") {
			t.Errorf("events%s: %d %s", q, r.StatusCode, b)
		}
	}
}

// The drain ends every stream at once, so shutdown need not wait for them.
func TestEventStreamEndsOnDrain(t *testing.T) {
	e := newEnv(t)
	id := e.signIn(e.boot.AdminToken)
	req, _ := http.NewRequest("GET", e.srv.URL+"/console/events", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: id})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	done := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); done <- err }()
	close(e.draining)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the stream broke: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived the drain")
	}
}

// The counts and deliveries routes answer under the caller's scopes.
func TestCountsAndDeliveries(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, "Message-ID: <c@x>\r\nSubject: c\r\n\r\nc\r\n")
	_, token, err := e.db.CreateKey(context.Background(), e.boot.ProjectID, "k", []string{"inboxes:read", "threads:read"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	limited := e.signIn(token)
	r := e.do("GET", "/console/inboxes/"+ib+"/counts", limited, "")
	if b := readAll(t, r); r.StatusCode != http.StatusOK || b != `{"deferred":0,"messages":null,"pending_approvals":null,"threads":1}`+"\n" {
		t.Errorf("counts: %d %s", r.StatusCode, b)
	}
	if r := e.do("GET", "/console/inboxes/"+ib+"/messages/"+d.MessageID+"/deliveries", limited, ""); r.StatusCode != http.StatusForbidden {
		t.Errorf("deliveries without messages:read: %d", r.StatusCode)
	}
	admin := e.signIn(e.boot.AdminToken)
	r = e.do("GET", "/console/inboxes/"+ib+"/messages/"+d.MessageID+"/deliveries", admin, "")
	if b := readAll(t, r); r.StatusCode != http.StatusOK || b != `{"data":[]}`+"\n" {
		t.Errorf("deliveries of inbound mail: %d %s", r.StatusCode, b)
	}
}
