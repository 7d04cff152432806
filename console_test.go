package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/corpus"
)

// The console in a real headless Chromium (Debian's chromium, which
// .ci/run installs), against a real server with mail delivered over SMTP.
// One browser serves every test of the file; each test opens its own
// tabs. Without a browser the tests fail in CI and skip elsewhere, saying
// what to install.

var sharedBrowser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

// findChromium is the browser binary: $CHROMIUM, else the first of the
// usual names on PATH.
func findChromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser returns the shared browser's context, starting it the first
// time.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := findChromium()
	if path == "" {
		corpus.SkipOrFail(t, "no Chromium on PATH: apt-get install chromium fonts-noto-cjk to run the browser tests (.ci/run installs them)")
	}
	sharedBrowser.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
			chromedp.WindowSize(1280, 800), chromedp.Flag("lang", "en-US"),
			// A sandboxed frame stays in the page's process (it is no less
			// sandboxed), so DevTools sees its document from the page.
			chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,IsolateSandboxedIframes"))
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		sharedBrowser.ctx = bctx
		sharedBrowser.cancel = func() { cancelBrowser(); cancelAlloc() }
		sharedBrowser.err = chromedp.Do(bctx) // starts the browser
	})
	if sharedBrowser.err != nil {
		t.Fatalf("start %s: %v", path, sharedBrowser.err)
	}
	return sharedBrowser.ctx
}

// tab is a browser tab on the console of one server.
type tab struct {
	t    *testing.T
	ctx  context.Context
	base string // http://host:port

	mu         sync.Mutex
	exceptions []string
	dialogs    []string
}

// newTab opens a tab; isolated gives it a cookie jar of its own (another
// person's browser), else it shares the browser's.
func newTab(t *testing.T, base string, isolated bool) *tab {
	t.Helper()
	var opts []chromedp.ContextOption
	if isolated {
		opts = append(opts, chromedp.WithNewBrowserContext())
	}
	ctx, cancel := chromedp.NewContext(browser(t), opts...)
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx, base: base}
	err := chromedp.Listen(ctx, func(ev any) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			tb.exceptions = append(tb.exceptions, msg)
		case *page.EventJavascriptDialogOpening:
			tb.dialogs = append(tb.dialogs, ev.Message)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if len(tb.exceptions) > 0 {
			t.Errorf("the console threw: %q", tb.exceptions)
		}
		if len(tb.dialogs) > 0 {
			t.Errorf("a page opened a dialog: %q", tb.dialogs)
		}
	})
	return tb
}

// do runs browser actions, failing the test on an error.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v\n%s", err, tb.text())
	}
}

// eval evaluates a JavaScript expression in the page (DevTools' own
// evaluation: the page's policy, which forbids eval, does not apply).
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// poll asks ok, about every 20 ms, until it says yes or within has
// passed, and returns its last answer. The browser is an external
// process: there is no event to wait on, only its state to read.
func poll(within time.Duration, ok func() bool) bool {
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// wait polls the browser until expr is true or 15 s have passed.
// (chromedp.Poll compiles its predicate with new Function, which the
// console's policy refuses.)
func (tb *tab) wait(what, expr string) {
	tb.t.Helper()
	var err error
	if poll(15*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
		defer cancel()
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		return err == nil && ok
	}) {
		return
	}
	res, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`performance.getEntriesByType('resource').map(e => e.name + ' ' + Math.round(e.duration)).join('\n')`))
	tb.t.Fatalf("waiting for %s: %v\npage:\n%s\nrequests:\n%s", what, err, tb.text(), res)
}

// text is what the page shows, for failure messages.
func (tb *tab) text() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	return s
}

// hash moves the console to a view without a page load.
func (tb *tab) hash(h string) {
	tb.t.Helper()
	eval[chromedp.Void](tb, `location.hash = `+jsString(h))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// signIn signs the tab in with an API key on the sign-in page.
func (tb *tab) signIn(token string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(tb.base+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("form.signin button[type=submit]")))
	tb.wait("the signed-in console", `!document.getElementById('top').hidden && document.querySelector('#nav')`)
}

// click clicks the first element matching sel whose text contains text.
func (tb *tab) click(sel, text string) {
	tb.t.Helper()
	expr := `[...document.querySelectorAll(` + jsString(sel) + `)].find(e => e.textContent.includes(` + jsString(text) + `) && e.offsetParent !== null)`
	tb.wait(fmt.Sprintf("%s %q", sel, text), expr)
	eval[chromedp.Void](tb, expr+`.click()`)
}

// typeInto focuses the element sel and types text into it, as keys.
// (chromedp's query actions are not used once the console runs: they
// wait on their own copy of a DOM that the console keeps changing.)
func (tb *tab) typeInto(sel, text string) {
	tb.t.Helper()
	tb.wait(sel, `document.querySelector(`+jsString(sel)+`)`)
	eval[chromedp.Void](tb, `document.querySelector(`+jsString(sel)+`).focus()`)
	tb.do(chromedp.KeyEvent(text))
}

// sessionCookie is the value of the tab's session cookie.
func (tb *tab) sessionCookie() string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		tb.t.Fatal(err)
	}
	for _, c := range res.Cookies {
		if c.Name == "inboxd_session" {
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
				tb.t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict", c)
			}
			return c.Value
		}
	}
	tb.t.Fatal("no session cookie")
	return ""
}

// consoleServer is a server for the console tests, with what they need
// of it.
type consoleServer struct {
	*running
	api            apiClient
	project, inbox string
	token          string
	base           string
}

func startConsoleServer(t *testing.T, extra ...string) *consoleServer {
	t.Helper()
	data := t.TempDir()
	s := startServer(t, data, append([]string{"--accept", "any"}, extra...)...)
	c, project, inbox := adminAPI(t, data, s.http)
	return &consoleServer{running: s, api: c, project: project, inbox: inbox, token: c.key, base: "http://" + s.http}
}

// call makes an API request with the admin key.
func (s *consoleServer) call(t *testing.T, method, path string, in, out any) {
	t.Helper()
	if out == nil {
		out = &map[string]any{}
	}
	if err := s.api.do(context.Background(), method, "/v1/projects/"+s.project+path, in, "", out); err != nil {
		t.Fatal(err)
	}
}

// mail sends messages over SMTP, on one connection.
func (s *consoleServer) mail(t *testing.T, to string, raws ...string) {
	t.Helper()
	c, err := gosmtp.Dial(s.smtp)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, raw := range raws {
		if err := c.SendMail("sender@example.com", []string{to}, strings.NewReader(raw)); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	c.Quit()
}

func mailFrom(from, id, subject, body string, headers ...string) string {
	return fmt.Sprintf("From: %s\r\nTo: inbox@localhost\r\nMessage-ID: <%s>\r\nSubject: %s\r\nMIME-Version: 1.0\r\n%s\r\n%s\r\n",
		from, id, subject, strings.Join(headers, ""), body)
}

// inboxID is the id of the inbox at address.
func (s *consoleServer) inboxID(t *testing.T, address string) string {
	t.Helper()
	var l struct {
		Data []struct{ ID, Address string }
	}
	s.call(t, "GET", "/inboxes?limit=100", nil, &l)
	for _, ib := range l.Data {
		if ib.Address == address {
			return ib.ID
		}
	}
	t.Fatalf("no inbox %s", address)
	return ""
}

// threadOf is the thread of the message with Message-ID id in an inbox.
func (s *consoleServer) threadOf(t *testing.T, inboxID, id string) string {
	t.Helper()
	var l struct {
		Data []struct {
			ThreadID     string `json:"thread_id"`
			RFCMessageID string `json:"rfc_message_id"`
		}
	}
	s.call(t, "GET", "/inboxes/"+inboxID+"/messages?limit=100", nil, &l)
	for _, m := range l.Data {
		if m.RFCMessageID == "<"+id+">" {
			return m.ThreadID
		}
	}
	t.Fatalf("no message %s", id)
	return ""
}

// hookReceiver is a webhook endpoint that fails until told to succeed.
type hookReceiver struct {
	mu   sync.Mutex
	ok   bool
	hits int
	url  string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.url = "http://" + serveLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.hits++
		if !h.ok {
			http.Error(w, "receiver down for maintenance", http.StatusInternalServerError)
		}
	}) + "/hook"
	return h
}

// serveLoopback serves handler on a loopback port until the test ends
// and returns its address.
func serveLoopback(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// tcpProxy forwards a loopback port to target; cut closes every
// connection it carries (new ones are still taken).
func tcpProxy(t *testing.T, target string) (addr string, cut func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	cut = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	t.Cleanup(func() { l.Close(); cut() })
	return l.Addr().String(), cut
}

// Every flow of the console a person goes through, in one browser.
func TestConsoleFlows(t *testing.T) {
	s := startConsoleServer(t, "--webhook-retry-schedule", "1h")
	hooks := newHookReceiver(t)
	var ep struct{ ID string }
	s.call(t, "POST", "/webhooks", map[string]any{"url": hooks.url, "event_types": []string{"approval.requested"}}, &ep)
	tb := newTab(t, s.base, false)

	t.Run("sign in with the admin key", func(t *testing.T) {
		tb.t = t
		tb.signIn(s.token)
		if got := eval[string](tb, `document.getElementById('keyname').textContent`); got != "admin" {
			t.Errorf("signed in as %q", got)
		}
		tb.wait("the inbox list", `document.querySelector('.row .title') && document.querySelector('.row .title').textContent === 'inbox@localhost'`)
		tb.wait("the live stream", `document.getElementById('live').dataset.state === 'on'`)
	})

	t.Run("an inbox and a thread appear live", func(t *testing.T) {
		tb.t = t
		eval[chromedp.Void](tb, `window.__noReload = 1`)
		s.mail(t, "sink@localhost", mailFrom("Ada <ada@example.com>", "live1@example.com", "Live one", "Hello from SMTP."))
		tb.wait("the new inbox", `[...document.querySelectorAll('.row .title')].some(e => e.textContent === 'sink@localhost')`)
		tb.wait("its count", `[...document.querySelectorAll('.row')].some(r => r.textContent.includes('sink@localhost') && r.textContent.includes('1 thread'))`)
		sink := s.inboxID(t, "sink@localhost")
		tb.hash("#/inbox/" + sink)
		tb.wait("the thread list", `document.querySelector('.thread .title')`)
		s.mail(t, "sink@localhost", mailFrom("Bo <bo@example.com>", "live2@example.com", "Live two", "Second."))
		tb.wait("the new thread", `[...document.querySelectorAll('.thread .title')].some(e => e.textContent === 'Live two')`)
		if eval[int](tb, `window.__noReload || 0`) != 1 {
			t.Error("the page was reloaded")
		}
	})

	// A conversation whose Date headers run backwards: the console shows
	// it in the order it arrived (sequence), not by date.
	conversation := []string{
		mailFrom("Ada <ada@example.com>", "c1@example.com", "Plans", "First, the plan.", "Date: Thu, 03 Dec 2026 10:00:00 +0000\r\n"),
		mailFrom("Bo <bo@example.com>", "c2@example.com", "Re: Plans", "Second, agreed.", "Date: Wed, 02 Dec 2026 10:00:00 +0000\r\nIn-Reply-To: <c1@example.com>\r\n"),
		mailFrom("Cy <cy@example.com>", "c3@example.com", "Re: Plans",
			"<p>Third, in <b>HTML</b>: <a href=\"https://example.com/plan\">the plan</a> <img src=\"https://tracker.example/p.gif\"></p>",
			"Date: Tue, 01 Dec 2026 10:00:00 +0000\r\nIn-Reply-To: <c2@example.com>\r\nReferences: <c1@example.com> <c2@example.com>\r\nContent-Type: text/html; charset=utf-8\r\n"),
	}
	s.mail(t, "inbox@localhost", conversation...)
	plans := s.threadOf(t, s.inbox, "c1@example.com")

	t.Run("a thread in sequence order", func(t *testing.T) {
		tb.t = t
		tb.hash("#/inbox/" + s.inbox + "/thread/" + plans)
		tb.wait("three messages", `document.querySelectorAll('article.message').length === 3`)
		got := eval[[]string](tb, `[...document.querySelectorAll('article.message')].map(e => e.dataset.seq + ' ' + e.querySelector('.who').textContent)`)
		want := []string{"1 Ada <ada@example.com>", "2 Bo <bo@example.com>", "3 Cy <cy@example.com>"}
		if !slices.Equal(got, want) {
			t.Errorf("messages %q, want %q", got, want)
		}
	})

	t.Run("the HTML tab renders in a sandboxed frame", func(t *testing.T) {
		tb.t = t
		// The last message opens by itself, on its HTML.
		tb.wait("the mail frame", `document.querySelector('article.message[data-seq="3"] iframe.mail')`)
		sandbox := eval[string](tb, `document.querySelector('iframe.mail').getAttribute('sandbox')`)
		if sandbox != "allow-popups allow-popups-to-escape-sandbox" {
			t.Errorf("iframe sandbox=%q", sandbox)
		}
		text := ""
		poll(10*time.Second, func() bool {
			if len(mailFrames(t, tb)) > 0 {
				text = frameText(t, tb, 0)
			}
			return strings.Contains(text, "the plan")
		})
		if !strings.Contains(text, "Third, in HTML: the plan") {
			t.Errorf("the frame shows %q", text)
		}
		links := frameLinks(t, tb, 0)
		if len(links) != 1 || !strings.Contains(links[0]["rel"], "noopener") || !strings.Contains(links[0]["rel"], "noreferrer") {
			t.Errorf("links in the frame: %v", links)
		}
		if imgs := frameAttrs(t, tb, 0, "IMG"); len(imgs) != 0 {
			t.Errorf("remote images shown before the click: %v", imgs)
		}
		tb.click("article.message[data-seq='3'] button.load-images", "Load remote images")
		tb.wait("the remote image", `document.querySelector('iframe.mail').src.endsWith('?images=remote')`)
		poll(10*time.Second, func() bool { return len(frameAttrs(t, tb, 0, "IMG")) > 0 })
		if imgs := frameAttrs(t, tb, 0, "IMG"); len(imgs) != 1 || imgs[0]["src"] != "https://tracker.example/p.gif" {
			t.Errorf("after the click: %v", imgs)
		}
	})

	t.Run("reply and see its delivery status", func(t *testing.T) {
		tb.t = t
		tb.typeInto("form.reply textarea", "Replying from the console.")
		tb.click("form.reply button", "Send reply")
		tb.wait("the reply", `document.querySelectorAll('article.message').length === 4`)
		tb.wait("its delivery status", `document.querySelector('article.message[data-seq="4"].outbound .badge.state').textContent === 'captured'`)
		tb.click("article.message[data-seq='4'] .msg-toggle", "To:")
		tb.wait("the recipient's status", `[...document.querySelectorAll('article.message[data-seq="4"] .deliveries tr')].some(r => r.textContent.includes('cy@example.com') && r.textContent.includes('captured'))`)
	})

	t.Run("approve a held send", func(t *testing.T) {
		tb.t = t
		s.call(t, "PATCH", "/inboxes/"+s.inbox, map[string]any{"send_policy": "approve_all"}, nil)
		var held struct {
			Result     string
			ApprovalID string `json:"approval_id"`
		}
		s.call(t, "POST", "/inboxes/"+s.inbox+"/messages", map[string]any{"to": []string{"ceo@bigcorp.example"}, "subject": "Contract", "text": "Sign here.",
			"reply_to": []string{"replies@elsewhere.example"}, "headers": map[string]string{"X-Campaign": "q4"}}, &held)
		if held.Result != "approval_required" {
			t.Fatalf("send: %+v", held)
		}
		tb.hash("#/approvals")
		tb.wait("the pending approval", `document.querySelector('article.approval[data-id="`+held.ApprovalID+`"] .badge.state.pending')`)
		if text := eval[string](tb, `document.querySelector('article.approval[data-id="`+held.ApprovalID+`"]').innerText`); !strings.Contains(text, "Sign here.") || !strings.Contains(text, "ceo@bigcorp.example") ||
			!strings.Contains(text, "Reply-To\nreplies@elsewhere.example") || !strings.Contains(text, "X-Campaign\nq4") {
			t.Errorf("the draft is not shown whole: %s", text)
		}
		tb.click(`article.approval[data-id="`+held.ApprovalID+`"] button`, "Approve and send")
		tb.wait("the approval decided", `document.querySelector('article.approval[data-id="`+held.ApprovalID+`"] .badge.state.approved')`)
		var ap struct{ Status, MessageID string }
		s.call(t, "GET", "/inboxes/"+s.inbox+"/approvals/"+held.ApprovalID, nil, &ap)
		if ap.Status != "approved" {
			t.Errorf("approval: %+v", ap)
		}
		s.call(t, "PATCH", "/inboxes/"+s.inbox, map[string]any{"send_policy": "allow"}, nil)
	})

	t.Run("retry a failed webhook delivery", func(t *testing.T) {
		tb.t = t
		tb.hash("#/webhooks/" + ep.ID)
		tb.wait("a delivery with a failed attempt", `[...document.querySelectorAll('.delivery')].some(d => d.textContent.includes('1 attempt') && d.querySelector('.badge.state.pending'))`)
		hooks.mu.Lock()
		hooks.ok = true
		hooks.mu.Unlock()
		tb.click(".delivery button.retry", "Retry")
		tb.wait("the delivery delivered", `document.querySelector('.delivery .badge.state.delivered') && document.querySelector('.delivery').textContent.includes('2 attempts')`)
		tb.wait("both attempts listed", `document.querySelectorAll('.delivery .attempts tbody tr').length === 2`)
		if text := eval[string](tb, `document.querySelector('.delivery .attempts').innerText`); !strings.Contains(text, "500") || !strings.Contains(text, "receiver down for maintenance") {
			t.Errorf("the failed attempt is not shown: %s", text)
		}
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		if hooks.hits != 2 {
			t.Errorf("the receiver got %d requests, want 2 (the failed attempt and the retry)", hooks.hits)
		}
	})

	t.Run("search and the keyboard", func(t *testing.T) {
		tb.t = t
		s.mail(t, "inbox@localhost", mailFrom("Taro <taro@example.jp>", "jp@example.jp", "=?utf-8?b?5p2x5Lqs44Gu5LqI5a6a?=",
			"東京で会議があります。", "Content-Type: text/plain; charset=utf-8\r\n"))
		tb.hash("#/inbox/" + s.inbox)
		tb.wait("the thread list", `document.querySelectorAll('.thread').length >= 3`)
		tb.do(chromedp.KeyEvent("/"))
		tb.wait("the search field focused", `document.activeElement && document.activeElement.type === 'search'`)
		tb.typeInto("input[type=search]", "東京\r")
		tb.wait("one result", `location.hash.includes('?q=') && document.querySelectorAll('.thread').length === 1 && document.querySelector('.thread .title').textContent === '東京の予定'`)
		searched := eval[string](tb, `location.hash`)
		tb.do(chromedp.KeyEvent("/"))
		tb.wait("the search field focused again", `document.activeElement && document.activeElement.type === 'search'`)
		tb.do(chromedp.KeyEvent(kb.Escape)) // leaves the field, not the view
		tb.wait("the field left", `document.activeElement === document.body && location.hash === `+jsString(searched))
		tb.do(chromedp.KeyEvent("j"))
		tb.wait("the result selected", `document.querySelector('.thread.selected')`)
		tb.do(chromedp.KeyEvent(kb.Enter))
		tb.wait("the thread opened", `location.hash.includes('/thread/') && document.querySelector('article.message')`)
		tb.do(chromedp.KeyEvent(kb.Escape))
		tb.wait("back to the list", `/^#\/inbox\/[^/]+$/.test(location.hash)`)
	})

	t.Run("a dropped stream reconnects and catches up", func(t *testing.T) {
		tb.t = t
		// The page through a proxy whose connections the test cuts (the
		// cookie is the host's, whatever the port).
		proxy, cut := tcpProxy(t, s.http)
		tb.do(chromedp.Navigate("http://" + proxy + "/#/inbox/" + s.inbox))
		tb.wait("the thread list, live", `document.querySelector('.thread') && document.getElementById('live').dataset.state === 'on'`)
		cut()
		tb.wait("the stream dropped", `document.getElementById('live').dataset.state !== 'on'`)
		s.mail(t, "inbox@localhost", mailFrom("Di <di@example.com>", "away@example.com", "While you were away", "Sent while the stream was down."))
		tb.wait("the mail it missed", `[...document.querySelectorAll('.thread .title')].some(e => e.textContent === 'While you were away')`)
		tb.wait("the stream back", `document.getElementById('live').dataset.state === 'on'`)
		tb.do(chromedp.Navigate(s.base + "/#/inbox/" + s.inbox))
		tb.wait("the console again", `document.querySelector('.thread')`)
	})

	t.Run("API keys and webhook endpoints, their secrets shown once", func(t *testing.T) {
		tb.t = t
		tb.hash("#/keys")
		tb.typeInto("form.card input[name=name]", "ci")
		tb.click("form.card button", "Create key")
		tb.wait("the token, once", `document.querySelector('dialog input.secret') && document.querySelector('dialog input.secret').value.startsWith('inboxd_')`)
		token := eval[string](tb, `document.querySelector('dialog input.secret').value`)
		tb.click("dialog button", "Done")
		tb.wait("the key listed", `[...document.querySelectorAll('.row strong')].some(e => e.textContent === 'ci')`)
		if strings.Contains(tb.text(), token) {
			t.Error("the token is still shown")
		}
		me := func() int {
			req, _ := http.NewRequest("GET", s.base+"/v1/me", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := me(); got != http.StatusOK {
			t.Fatalf("the new key: %d", got)
		}
		eval[chromedp.Void](tb, `[...document.querySelectorAll('.row')].find(r => r.querySelector('strong').textContent === 'ci').querySelector('button.danger').click()`)
		tb.click("dialog button", "Revoke")
		tb.wait("the key gone", `![...document.querySelectorAll('.row strong')].some(e => e.textContent === 'ci')`)
		if got := me(); got != http.StatusUnauthorized {
			t.Errorf("the revoked key: %d", got)
		}

		tb.hash("#/webhooks")
		tb.typeInto("form.card input[name=url]", "http://127.0.0.1:9/console-made")
		tb.click("form.card button", "Create endpoint")
		tb.wait("the secret, once", `document.querySelector('dialog input.secret') && document.querySelector('dialog input.secret').value.startsWith('whsec_')`)
		tb.click("dialog button", "Done")
		row := `[...document.querySelectorAll('.row')].find(r => r.textContent.includes('console-made'))`
		tb.wait("the endpoint listed, enabled", row+` && `+row+`.querySelector('.badge.on')`)
		eval[chromedp.Void](tb, row+`.querySelector('.row-actions button').click()`) // Disable
		tb.wait("the endpoint disabled", row+` && `+row+`.querySelector('.badge.off')`)
		eval[chromedp.Void](tb, `[...`+row+`.querySelectorAll('button')].find(b => b.textContent === 'Rotate secret').click()`)
		tb.click("dialog button", "Rotate")
		tb.wait("the new secret", `document.querySelector('dialog input.secret') && document.querySelector('dialog input.secret').value.startsWith('whsec_')`)
		tb.click("dialog button", "Done")
	})

	t.Run("clear an inbox", func(t *testing.T) {
		tb.t = t
		sink := s.inboxID(t, "sink@localhost")
		tb.hash("#/inbox/" + sink)
		tb.wait("the sink's threads", `document.querySelectorAll('.thread').length === 2`)
		tb.click("button", "Clear inbox")
		tb.click("dialog button", "Delete all messages")
		tb.wait("an empty inbox", `document.querySelector('.list .empty') && !document.querySelector('.thread')`)
		var l struct{ Data []any }
		s.call(t, "GET", "/inboxes/"+sink+"/messages", nil, &l)
		if len(l.Data) != 0 {
			t.Errorf("%d messages left", len(l.Data))
		}
	})

	t.Run("sign out and be refused", func(t *testing.T) {
		tb.t = t
		cookie := tb.sessionCookie()
		tb.click("#signout", "Sign out")
		tb.wait("the sign-in page", `document.getElementById('token') && document.getElementById('top').hidden`)
		if got := eval[int](tb, `fetch('/v1/me').then(r => r.status)`); got != http.StatusUnauthorized {
			t.Errorf("the page after sign-out: %d", got)
		}
		req, _ := http.NewRequest("GET", s.base+"/v1/me", nil)
		req.AddCookie(&http.Cookie{Name: "inboxd_session", Value: cookie})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the old session's cookie: %d", resp.StatusCode)
		}
	})
}

// domOf is the tab's whole DOM, frames included (DevTools sees into the
// sandboxed frames, whose opaque origin the page cannot).
func domOf(t *testing.T, tb *tab) *cdp.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, dom.GetDocument, dom.GetDocumentParams{Depth: new(int64(-1)), Pierce: new(true)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Root
}

// mailFrames are the documents of the tab's mail frames, in page order.
func mailFrames(t *testing.T, tb *tab) []*cdp.Node {
	var out []*cdp.Node
	var walk func(n *cdp.Node)
	walk = func(n *cdp.Node) {
		if n.NodeName == "IFRAME" && strings.Contains(attr(n, "class"), "mail") && n.ContentDocument != nil {
			out = append(out, n.ContentDocument)
			return
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(domOf(t, tb))
	return out
}

// attr is the value of a node's attribute name ("" when it has none).
func attr(n *cdp.Node, name string) string {
	for j := 0; j+1 < len(n.Attributes); j += 2 {
		if n.Attributes[j] == name {
			return n.Attributes[j+1]
		}
	}
	return ""
}

func frameDoc(t *testing.T, tb *tab, i int) *cdp.Node {
	t.Helper()
	frames := mailFrames(t, tb)
	if i >= len(frames) {
		t.Fatalf("mail frame %d of %d", i, len(frames))
	}
	return frames[i]
}

// frameText is the text of the body of mail frame i.
func frameText(t *testing.T, tb *tab, i int) string {
	var b strings.Builder
	var walk func(n *cdp.Node, inBody bool)
	walk = func(n *cdp.Node, inBody bool) {
		if n.NodeName == "BODY" {
			inBody = true
		}
		if inBody && n.NodeType == 3 { // a text node
			b.WriteString(n.NodeValue)
		}
		for _, c := range n.Children {
			walk(c, inBody)
		}
	}
	walk(frameDoc(t, tb, i), false)
	return strings.Join(strings.Fields(b.String()), " ")
}

// frameAttrs are the attributes of the elements named name in mail frame i.
func frameAttrs(t *testing.T, tb *tab, i int, name string) []map[string]string {
	var out []map[string]string
	var walk func(n *cdp.Node)
	walk = func(n *cdp.Node) {
		if n.NodeName == name {
			a := map[string]string{}
			for j := 0; j+1 < len(n.Attributes); j += 2 {
				a[n.Attributes[j]] = n.Attributes[j+1]
			}
			out = append(out, a)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(frameDoc(t, tb, i))
	return out
}

func frameLinks(t *testing.T, tb *tab, i int) []map[string]string { return frameAttrs(t, tb, i, "A") }

// A key with only threads:read and messages:read (and one inbox) sees the
// mail and nothing that would change it; the server refuses those
// actions when the page is made to try them anyway.
func TestConsoleLimitedKey(t *testing.T) {
	s := startConsoleServer(t)
	s.mail(t, "inbox@localhost", mailFrom("Ada <ada@example.com>", "l1@example.com", "Read only", "You may read this."))
	thread := s.threadOf(t, s.inbox, "l1@example.com")
	var msg struct{ Data []struct{ ID string } }
	s.call(t, "GET", "/inboxes/"+s.inbox+"/messages", nil, &msg)
	var key struct{ Token string }
	s.call(t, "POST", "/keys", map[string]any{"name": "reader", "scopes": []string{"threads:read", "messages:read"}, "inbox_ids": []string{s.inbox}}, &key)

	tb := newTab(t, s.base, true)
	tb.signIn(key.Token)
	if nav := eval[string](tb, `document.getElementById('nav').textContent`); nav != "" {
		t.Errorf("navigation offered: %q", nav)
	}
	tb.wait("the inbox, by id", `document.querySelector('.row .title') && document.querySelector('.row .title').textContent === `+jsString(s.inbox))
	if text := tb.text(); !strings.Contains(text, "lacks inboxes:read") {
		t.Errorf("no word about the missing scope:\n%s", text)
	}
	tb.hash("#/inbox/" + s.inbox)
	tb.wait("the thread", `document.querySelector('.thread .title') && document.querySelector('.thread .title').textContent === 'Read only'`)
	tb.hash("#/inbox/" + s.inbox + "/thread/" + thread)
	tb.wait("the message", `document.querySelector('article.message pre.body-text') && document.querySelector('article.message pre.body-text').textContent.includes('You may read this.')`)
	for _, sel := range []string{"form.reply", "button.danger", ".approval", "select", "form.card"} {
		if eval[bool](tb, `!!document.querySelector(`+jsString(sel)+`)`) {
			t.Errorf("the page shows %s", sel)
		}
	}
	for _, label := range []string{"Reply", "Delete", "Clear inbox", "Approve"} {
		if eval[bool](tb, `[...document.querySelectorAll('button')].some(b => b.textContent.includes(`+jsString(label)+`))`) {
			t.Errorf("a %q button is shown", label)
		}
	}
	tb.click("button[role=tab]", "Raw")
	tb.wait("a word about messages:raw", `document.body.innerText.includes('needs the scope messages:raw')`)
	for _, v := range []string{"#/webhooks", "#/keys", "#/approvals", "#/events"} {
		tb.hash(v)
		tb.wait("a clear message on "+v, `document.querySelector('main .notice') && document.querySelector('main .notice').textContent.includes('needs the scope')`)
	}

	// Forced: the page's own requests with the session cookie.
	base := "/v1/projects/" + s.project + "/inboxes/" + s.inbox
	for _, c := range []struct{ method, path, body string }{
		{"POST", base + "/messages", `{"to":["a@example.com"],"text":"x"}`},
		{"DELETE", base + "/messages/" + msg.Data[0].ID, ""},
		{"DELETE", base + "/messages", ""},
		{"POST", base + "/approvals/apr_x/approve", ""},
		{"GET", "/v1/projects/" + s.project + "/webhooks", ""},
		{"POST", "/v1/projects/" + s.project + "/webhooks", `{"url":"http://127.0.0.1:1/"}`},
		{"POST", "/v1/projects/" + s.project + "/keys", `{"name":"x","scopes":["threads:read"]}`},
	} {
		js := `fetch(` + jsString(c.path) + `, {method: ` + jsString(c.method) + `, headers: {'Content-Type': 'application/json'}` +
			map[bool]string{true: `, body: ` + jsString(c.body), false: ""}[c.body != ""] + `}).then(async r => r.status + ' ' + (await r.json()).error.code)`
		if got := eval[string](tb, js); got != "403 permission_denied" {
			t.Errorf("%s %s: %s", c.method, c.path, got)
		}
	}
	var still struct{ Data []any }
	s.call(t, "GET", "/inboxes/"+s.inbox+"/messages", nil, &still)
	if len(still.Data) != 1 {
		t.Errorf("%d messages after the refused deletes", len(still.Data))
	}
	// A hash that is no valid percent-encoding is no page, not a blank one.
	tb.hash("#/inbox/%E0%A4%A")
	tb.wait("no such page", `document.querySelector('main .notice') && document.querySelector('main .notice').textContent.includes('There is no such page')`)

	// An approver's key for every inbox, without inboxes:read, cannot
	// find the inboxes to ask: it is told so, not that nothing waits.
	var approver struct{ Token string }
	s.call(t, "POST", "/keys", map[string]any{"name": "approver", "scopes": []string{"approvals:read", "approvals:write"}}, &approver)
	ap := newTab(t, s.base, true)
	ap.signIn(approver.Token)
	ap.hash("#/approvals")
	ap.wait("a word about inboxes:read", `document.querySelector('main .notice') && document.querySelector('main .notice').textContent.includes('needs the scope inboxes:read')`)
	if eval[bool](ap, `document.body.innerText.includes('Nothing waits')`) {
		t.Error("the approver is told that nothing waits")
	}
}

// xssCatcher counts the requests any payload that ran would make.
type xssCatcher struct {
	mu   sync.Mutex
	hits []string
	addr string
}

func newXSSCatcher(t *testing.T) *xssCatcher {
	c := &xssCatcher{}
	c.addr = serveLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.hits = append(c.hits, r.URL.String())
		c.mu.Unlock()
	})
	return c
}

// marker is what a payload runs instead of alert(1): a request to the
// catcher and a mark on the console's own title.
func (c *xssCatcher) marker(name string) string {
	return "fetch('http://" + c.addr + "/ran/" + strings.ReplaceAll(name, " ", "-") + "'),top.document.title='XSS'"
}

// The XSS corpus, delivered over SMTP, shown in the thread, the feed and
// the thread list: no payload runs (the catcher sees nothing, the title
// and dialogs are untouched), and no mail frame reaches the console's
// origin except for its own document and its signed inline images.
func TestConsoleXSSCorpus(t *testing.T) {
	s := startConsoleServer(t)
	catcher := newXSSCatcher(t)
	var raws []string
	for i, p := range corpus.XSSPayloads() {
		mark := strings.NewReplacer("alert(1)", catcher.marker(p.Name), "alert(2)", catcher.marker(p.Name), "msgbox(1)", catcher.marker(p.Name))
		p.HTML = mark.Replace(p.HTML)
		for j := range p.Parts {
			p.Parts[j].ContentID = mark.Replace(p.Parts[j].ContentID)
			p.Parts[j].Filename = mark.Replace(p.Parts[j].Filename)
		}
		raw := p.Message(fmt.Sprintf("xss%d@example.com", i))
		if i > 0 { // one thread, so one page shows them all
			raw = strings.Replace(raw, "\r\nSubject:", "\r\nIn-Reply-To: <xss0@example.com>\r\nSubject:", 1)
		}
		raws = append(raws, strings.Replace(raw, "To: inbox@localhost", "To: xss@localhost", 1))
	}
	// Markup where the console itself shows sender text: subject, names,
	// preview, filename.
	img := `<img src=x onerror="` + catcher.marker("console") + `">`
	raws = append(raws, "From: \""+img+"\" <m@example.com>\r\nTo: xss@localhost\r\nMessage-ID: <names@example.com>\r\nIn-Reply-To: <xss0@example.com>\r\n"+
		"Subject: "+img+"<script>"+catcher.marker("subject")+"</script>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"+
		"--b\r\nContent-Type: text/plain\r\n\r\n"+img+"<script>"+catcher.marker("preview")+"</script>\r\n"+
		"--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=\""+strings.ReplaceAll(img, `"`, "'")+".txt\"\r\n\r\nx\r\n--b--\r\n")
	s.mail(t, "xss@localhost", raws...)
	xss := s.inboxID(t, "xss@localhost")
	thread := s.threadOf(t, xss, "xss0@example.com")

	tb := newTab(t, s.base, true)
	// The requests each mail frame makes, by frame.
	var mu sync.Mutex
	frames := map[cdp.FrameID]bool{}
	var fromFrames []string
	if err := chromedp.Listen(tb.ctx, func(ev any) {
		e, ok := ev.(*network.EventRequestWillBeSent)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if e.Type == network.ResourceTypeDocument && strings.Contains(e.Request.URL, "/frame") {
			frames[e.FrameID] = true
			return
		}
		if frames[e.FrameID] {
			fromFrames = append(fromFrames, e.Request.URL)
		}
	}); err != nil {
		t.Fatal(err)
	}
	tb.signIn(s.token)
	title := eval[string](tb, `document.title`)
	tb.hash("#/inbox/" + xss + "/thread/" + thread)
	n := len(raws)
	tb.wait("every message", fmt.Sprintf(`document.querySelectorAll('article.message').length === %d`, n))
	// Open every message: each shows its HTML in a frame, or its text.
	eval[chromedp.Void](tb, `document.querySelectorAll('article.message .msg-toggle[aria-expanded=false]').forEach(b => b.click())`)
	tb.wait("every frame loaded", fmt.Sprintf(`document.querySelectorAll('iframe.mail').length === %d && [...document.querySelectorAll('.msg-body')].every(b => b.querySelector('.tab-area'))`, n-1))
	tb.wait("every frame's document", fmt.Sprintf(`performance.getEntriesByType('resource').filter(e => e.name.includes('/frame')).length >= %d`, n-1))
	if got := len(mailFrames(t, tb)); got != n-1 {
		t.Errorf("%d mail frames with a document, want %d", got, n-1)
	}
	tb.hash("#/inbox/" + xss + "/feed")
	tb.wait("the feed", `document.querySelectorAll('.list .row').length > 20`)
	tb.hash("#/inbox/" + xss)
	tb.wait("the thread list", `document.querySelector('.thread')`)
	tb.hash("#/events")
	tb.wait("the event log", `document.querySelector('.event')`)

	// Anything that ran has had the time to call out: a frame's document
	// and images load before its load event, which every frame had.
	catcher.mu.Lock()
	hits := slices.Clone(catcher.hits)
	catcher.mu.Unlock()
	if len(hits) > 0 {
		t.Errorf("payloads ran: %q", hits)
	}
	if got := eval[string](tb, `document.title`); got != title {
		t.Errorf("the title became %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	inline := 0
	for _, u := range fromFrames {
		switch {
		case strings.HasPrefix(u, s.base+"/console/inline/"):
			inline++
		case strings.HasPrefix(u, "http:"), strings.HasPrefix(u, "https:"), strings.HasPrefix(u, "ws:"), strings.HasPrefix(u, "wss:"):
			t.Errorf("a mail frame requested %s", u)
		}
		// Others (an unknown cid:, a data: image) fetch nothing.
	}
	if inline == 0 {
		t.Error("no mail frame loaded an inline image")
	}
	if len(frames) < n-1 {
		t.Errorf("saw %d frame documents, want %d", len(frames), n-1)
	}
}

// Screenshots of the main views at 1280×800 and 360×740, light and dark,
// for a person to look at (web/testdata/screenshots, not committed), and
// the load of a 200-message thread, timed in the browser.
func TestConsoleScreenshotsAndLargeThread(t *testing.T) {
	s := startConsoleServer(t)
	s.mail(t, "inbox@localhost",
		mailFrom("Ada Lovelace <ada@example.com>", "s1@example.com", "Quarterly report", "The numbers are in; see the attached summary."),
		mailFrom("Bo <bo@example.com>", "s2@example.com", "Re: Quarterly report", "<p>Looks <b>great</b>. One question about <a href=\"https://example.com/q3\">Q3</a>.</p><blockquote>The numbers are in</blockquote>",
			"In-Reply-To: <s1@example.com>\r\nContent-Type: text/html; charset=utf-8\r\n"),
		mailFrom("=?utf-8?b?5bGx55Sw5aSq6YOO?= <taro@example.jp>", "s3@example.jp", "=?utf-8?b?5p2x5Lqs44Gn5Lya6K2w44GM44GC44KK44G+44GZ?=",
			"来週の火曜日、東京で会議があります。ご都合はいかがですか。", "Content-Type: text/plain; charset=utf-8\r\n"),
		mailFrom("=?utf-8?b?2YXYrdmF2K8=?= <m@example.eg>", "s4@example.eg", "=?utf-8?b?2YXYsdit2KjYpyDYqNmD2YU=?=",
			"مرحبا، هذه رسالة تجريبية باللغة العربية.", "Content-Type: text/plain; charset=utf-8\r\n"))
	s.call(t, "PATCH", "/inboxes/"+s.inbox, map[string]any{"send_policy": "approve_external"}, nil)
	s.call(t, "POST", "/inboxes/"+s.inbox+"/messages", map[string]any{"to": []string{"ceo@bigcorp.example"}, "subject": "Offer letter", "text": "Dear CEO,\n\nplease find the offer attached."}, nil)
	report := s.threadOf(t, s.inbox, "s1@example.com")

	tb := newTab(t, s.base, true)
	tb.signIn(s.token)
	dir := filepath.Join("web", "testdata", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	views := []struct{ name, hash, ready string }{
		{"inboxes", "#/", `document.querySelector('.counts .count')`},
		{"threads", "#/inbox/" + s.inbox, `document.querySelectorAll('.thread').length === 3`},
		{"thread", "#/inbox/" + s.inbox + "/thread/" + report, `document.querySelector('iframe.mail')`},
		{"approvals", "#/approvals", `document.querySelector('.approval')`},
		{"events", "#/events", `document.querySelector('.event')`},
	}
	var shots []string
	for _, size := range []struct{ w, h int64 }{{1280, 800}, {360, 740}} {
		for _, scheme := range []string{"light", "dark"} {
			tb.do(chromedp.EmulateViewport(size.w, size.h), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
				_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
				return err
			}))
			for _, v := range views {
				tb.hash("#/blank")
				tb.hash(v.hash)
				tb.wait(v.name, v.ready)
				if v.name == "thread" {
					// The frame's document, painted.
					poll(10*time.Second, func() bool { return len(mailFrames(t, tb)) > 0 })
				}
				png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s-%dx%d-%s.png", v.name, size.w, size.h, scheme)
				if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
					t.Fatal(err)
				}
				shots = append(shots, name)
			}
		}
	}
	t.Logf("screenshots in %s: %s", dir, strings.Join(shots, " "))

	// 200 messages in one thread, then full page loads of it.
	long := make([]string, 200)
	for i := range long {
		h := ""
		if i > 0 {
			h = fmt.Sprintf("In-Reply-To: <long%d@example.com>\r\n", i-1)
		}
		long[i] = mailFrom(fmt.Sprintf("Sender %d <s%d@example.com>", i%7, i%7), fmt.Sprintf("long%d@example.com", i), "A long conversation",
			fmt.Sprintf("Message %d of the long conversation.\r\n\r\n> quoted history\r\n", i+1), h)
	}
	s.mail(t, "inbox@localhost", long...)
	longThread := s.threadOf(t, s.inbox, "long199@example.com")
	tb.do(chromedp.EmulateViewport(1280, 800))
	// Page loads of the thread's URL: from another page (a new document
	// in a new renderer, as a link opened in a new tab) and reloads.
	var marks []float64
	load := func(before chromedp.Action[chromedp.Void], action chromedp.Action[chromedp.Void]) {
		tb.do(before)
		tb.do(action)
		tb.wait("the rendered thread", `performance.getEntriesByName('inboxd:thread-rendered').length > 0`)
		marks = append(marks, eval[float64](tb, `performance.getEntriesByName('inboxd:thread-rendered')[0].startTime`))
		if n := eval[int](tb, `document.querySelectorAll('article.message').length`); n != 200 {
			t.Fatalf("%d messages rendered, want 200", n)
		}
	}
	url := s.base + "/#/inbox/" + s.inbox + "/thread/" + longThread
	for range 3 {
		load(chromedp.Navigate("about:blank"), chromedp.Navigate(url))
	}
	for range 3 {
		load(chromedp.Sleep(0), chromedp.Reload())
	}
	sorted := slices.Clone(marks)
	sort.Float64s(sorted)
	median := (sorted[2] + sorted[3]) / 2
	t.Logf("200-message thread: rendered %.0f ms after navigation start (median of 6 page loads; fastest %.0f ms; navigations %v ms, reloads %v ms)",
		median, sorted[0], roundAll(marks[:3]), roundAll(marks[3:]))
	// The fastest load is what the console can do; a busy machine (the
	// rest of go test ./... beside it) slows single loads down.
	if sorted[0] >= 1000 {
		t.Errorf("a 200-message thread renders in %.0f ms at best, want under 1 s", sorted[0])
	}
}

func roundAll(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x + 0.5)
	}
	return out
}
