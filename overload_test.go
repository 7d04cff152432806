package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// enhanced421 is a 421 greeting's text with a 4.x.x enhanced status code
// (RFC 3463 §2: the class of a transient failure is 4).
var enhanced421 = regexp.MustCompile(`^4\.\d{1,3}\.\d{1,3} `)

// TestOverload500Connections is SPEC §2 "a client that exceeds [the limits]
// gets the proper SMTP code, never a hang" under real overload: 500
// concurrent connections to a child process running with the default
// limits. The sessions that get a slot hold it until every connection has
// its greeting, so the server sees all 500 at once; the rest must get a 421
// greeting and a clean close. Then every held session sends a message, and
// every 250 must be readable through the API, which keeps answering
// throughout. Timeouts here are failure guards, never synchronisation.
func TestOverload500Connections(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a child process and opens 500 connections")
	}
	const (
		conns    = 500
		guard    = 20 * time.Second // per connection: a hang fails instead of blocking the test
		apiBound = 5 * time.Second
	)
	// The limit under test is the flag's default, not a number copied here.
	var defaults Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs, &defaults)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	limit := defaults.MaxSessions
	if limit <= 0 || limit >= conns {
		t.Fatalf("default --max-sessions %d does not make %d connections an overload", limit, conns)
	}

	buildStart := time.Now()
	bin := buildBinary(t)
	data := t.TempDir()
	// The defaults, but for the per-address cap: every connection comes
	// from 127.0.0.1, and the limit under test is the global one.
	_, smtpAddr, httpAddr := startChild(t, bin, data, "--smtp-max-sessions-per-ip", "0")
	t.Logf("built and started the child in %v; --max-sessions default %d", time.Since(buildStart).Round(time.Millisecond), limit)
	admin, project, inbox := adminAPI(t, data, httpAddr)
	api := &overloadAPI{
		base:  "http://" + httpAddr,
		token: admin.key,
		// A new TCP connection per request: the HTTP listener must accept
		// during the storm, not just serve a warm keep-alive connection.
		client: &http.Client{Timeout: 2 * guard, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	feed := "/v1/projects/" + project + "/inboxes/" + inbox + "/messages"

	// A prober asks /readyz and the message feed, one request at a time,
	// from before the first connection until the last session is done.
	stopProbe, probeDone := make(chan struct{}), make(chan struct{})
	var probes probeStats
	go func() {
		defer close(probeDone)
		for {
			select {
			case <-stopProbe:
				return
			default:
			}
			if probes.add(t, api, "/readyz", apiBound) < 0 || probes.add(t, api, feed+"?limit=25", apiBound) < 0 {
				return // reported once; no flood of the same failure
			}
		}
	}()
	endProbe := sync.OnceFunc(func() { close(stopProbe); <-probeDone })
	defer endProbe()

	results := make([]overloadResult, conns)
	var greeted, finished sync.WaitGroup
	release := make(chan struct{})
	stormStart := time.Now()
	for i := range conns {
		greeted.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			r := &results[i]
			onceGreeted := sync.OnceFunc(greeted.Done)
			defer onceGreeted()
			conn, tp, code, msg, err := dialGreeting(smtpAddr, guard)
			if err != nil {
				r.err = err
				return
			}
			defer conn.Close()
			r.code, r.greeting = code, msg
			switch code {
			case 421:
				// The refusal must be the whole conversation: nothing after
				// the greeting, then EOF (a FIN, not a reset, not a hang).
				onceGreeted()
				rest, err := io.ReadAll(tp.R)
				if err != nil || len(rest) > 0 {
					r.err = fmt.Errorf("after 421: read %q, %v (want a clean EOF)", rest, err)
				}
				return
			case 220:
			default:
				r.err = fmt.Errorf("greeting %d %s", code, msg)
				return
			}
			onceGreeted()
			<-release // hold the slot until all 500 have their greeting
			id := fmt.Sprintf("overload-%d@example.com", i)
			subject := fmt.Sprintf("overload %d", i)
			body := fmt.Sprintf("From: Sender <sender@example.com>\r\nTo: inbox@localhost\r\nMessage-ID: <%s>\r\nSubject: %s\r\n\r\nMessage %d of the overload test.\r\n", id, subject, i)
			if err := smtpSend(tp, fmt.Sprintf("client%d.example", i), "sender@example.com", "inbox@localhost", body); err != nil {
				r.err = err
				return
			}
			r.msgID, r.subject = "<"+id+">", subject
			// QUIT's close releases the slot before the FIN, so reading
			// to EOF means this session's slot is free again.
			if _, _, err := tpCmd(tp, 221, "QUIT"); err != nil {
				r.err = err
				return
			}
			if rest, err := io.ReadAll(tp.R); err != nil || len(rest) > 0 {
				r.err = fmt.Errorf("after QUIT: read %q, %v (want a clean EOF)", rest, err)
			}
		}()
	}
	greeted.Wait()
	greetTime := time.Since(stormStart)

	// Every held session is open now: the overload is at its peak.
	readyLat := probes.add(t, api, "/readyz", apiBound)
	feedLat := probes.add(t, api, feed+"?limit=25", apiBound)
	close(release)
	sendStart := time.Now()
	finished.Wait()
	sendTime := time.Since(sendStart)
	endProbe()

	var accepted, refused, ok250 int
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("connection %d (greeting %d %q): %v", i, r.code, r.greeting, r.err)
		case r.code == 220:
			accepted++
			if r.msgID != "" {
				ok250++
			}
		case r.code == 421:
			refused++
			if !enhanced421.MatchString(r.greeting) {
				t.Errorf("connection %d: 421 without a 4.x.x enhanced code: %q", i, r.greeting)
			}
		}
	}
	t.Logf("%d connections: %d accepted, %d refused with 421 (%q), %d errors; all greeted in %v",
		conns, accepted, refused, firstRefusal(results), conns-accepted-refused, greetTime.Round(time.Millisecond))
	t.Logf("%d of %d accepted sessions got 250 for DATA; sends took %v", ok250, accepted, sendTime.Round(time.Millisecond))
	t.Logf("API at the peak (all %d sessions held): /readyz %v, message feed %v", accepted, readyLat.Round(time.Microsecond), feedLat.Round(time.Microsecond))
	probes.log(t)
	if accepted != limit || refused != conns-limit {
		// Held sessions never free their slot, so exactly the limit is served.
		t.Errorf("accepted %d, refused %d; want %d and %d", accepted, refused, limit, conns-limit)
	}
	if ok250 != accepted {
		t.Errorf("%d accepted sessions but %d 250s", accepted, ok250)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every 250 is in the database, read through the API.
	stored := map[string]string{} // rfc_message_id → subject
	total := 0
	for cursor := ""; ; {
		var page struct {
			Data []struct {
				RFCMessageID string `json:"rfc_message_id"`
				Subject      string `json:"subject"`
			}
			NextCursor *string `json:"next_cursor"`
			HasMore    bool    `json:"has_more"`
		}
		path := feed + "?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		api.getJSON(t, path, &page)
		for _, m := range page.Data {
			stored[m.RFCMessageID] = m.Subject
			total++
		}
		if !page.HasMore || page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	t.Logf("stored: %d messages (%d distinct Message-IDs) for %d 250s", total, len(stored), ok250)
	if total != ok250 || len(stored) != ok250 {
		t.Errorf("the inbox holds %d messages (%d distinct), want the %d that got 250", total, len(stored), ok250)
	}
	for i, r := range results {
		if r.msgID == "" {
			continue
		}
		if subject, ok := stored[r.msgID]; !ok {
			t.Errorf("connection %d: %s got 250 but is not stored", i, r.msgID)
		} else if subject != r.subject {
			t.Errorf("connection %d: %s stored with subject %q, want %q", i, r.msgID, subject, r.subject)
		}
	}

	// The slots are free again: exactly the limit of new sessions is served
	// at once (no slot leaked, none released twice), and one more is refused.
	var again []net.Conn
	defer func() {
		for _, c := range again {
			c.Close()
		}
	}()
	for i := range limit + 1 {
		conn, tp, code, msg, err := dialGreeting(smtpAddr, guard)
		if err != nil {
			t.Fatalf("after the overload, connection %d: %v", i, err)
		}
		again = append(again, conn)
		want := 220
		if i == limit {
			want = 421
		}
		if code != want {
			t.Fatalf("after the overload, connection %d of %d: greeting %d %s, want %d", i+1, limit+1, code, msg, want)
		}
		if code == 220 && i == 0 {
			// One of them delivers too: the server is back to normal.
			if err := smtpSend(tp, "after.example", "sender@example.com", "inbox@localhost",
				"Message-ID: <overload-after@example.com>\r\nSubject: after\r\n\r\nback to normal\r\n"); err != nil {
				t.Fatalf("after the overload: %v", err)
			}
		}
	}
	t.Logf("after the overload: %d new sessions served at once, number %d refused", limit, limit+1)
}

// dialGreeting connects and reads the greeting, with a deadline on the
// whole connection as a failure guard.
func dialGreeting(addr string, guard time.Duration) (net.Conn, *textproto.Conn, int, string, error) {
	conn, err := net.DialTimeout("tcp", addr, guard)
	if err != nil {
		return nil, nil, 0, "", fmt.Errorf("dial: %w", err)
	}
	conn.SetDeadline(time.Now().Add(guard))
	tp := textproto.NewConn(conn)
	code, msg, err := tp.ReadResponse(0)
	if err != nil {
		conn.Close()
		return nil, nil, code, msg, fmt.Errorf("greeting: %w", err)
	}
	return conn, tp, code, msg, nil
}

// tpCmd sends one SMTP command and expects the reply code.
func tpCmd(tp *textproto.Conn, expect int, format string, args ...any) (int, string, error) {
	if err := tp.PrintfLine(format, args...); err != nil {
		return 0, "", err
	}
	code, msg, err := tp.ReadResponse(expect)
	if err != nil {
		return code, msg, fmt.Errorf("%s: %w", strings.Fields(format)[0], err)
	}
	return code, msg, nil
}

// smtpSend runs one transaction on a greeted session; nil means DATA got 250.
func smtpSend(tp *textproto.Conn, helo, from, to, body string) error {
	if _, _, err := tpCmd(tp, 250, "EHLO %s", helo); err != nil {
		return err
	}
	if _, _, err := tpCmd(tp, 250, "MAIL FROM:<%s>", from); err != nil {
		return err
	}
	if _, _, err := tpCmd(tp, 250, "RCPT TO:<%s>", to); err != nil {
		return err
	}
	if _, _, err := tpCmd(tp, 354, "DATA"); err != nil {
		return err
	}
	w := tp.DotWriter()
	if _, err := io.WriteString(w, body); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if _, _, err := tp.ReadResponse(250); err != nil {
		return fmt.Errorf("end of DATA: %w", err)
	}
	return nil
}

// overloadResult is what one connection of the storm saw.
type overloadResult struct {
	code     int    // greeting code: 220 or 421
	greeting string // greeting text after the code
	err      error  // anything that is neither a served session nor a clean refusal
	msgID    string // set when DATA got 250
	subject  string
}

// firstRefusal is the text of a 421 greeting, for the log.
func firstRefusal(results []overloadResult) string {
	for _, r := range results {
		if r.code == 421 && r.err == nil {
			return "421 " + r.greeting
		}
	}
	return ""
}

type overloadAPI struct {
	base, token string
	client      *http.Client
}

// get does one authenticated GET and returns its status, body and latency.
func (a *overloadAPI) get(path string) (int, []byte, time.Duration, error) {
	req, err := http.NewRequest("GET", a.base+path, nil)
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, time.Since(start), err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, time.Since(start), err
}

func (a *overloadAPI) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	code, body, _, err := a.get(path)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", path, code, body, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// probeStats collects API latencies during the overload.
type probeStats struct {
	mu    sync.Mutex
	n     map[string]int
	worst map[string]time.Duration
}

// add probes path once, fails the test unless it answers 200 within bound,
// and returns the latency (negative after a failure).
func (p *probeStats) add(t *testing.T, a *overloadAPI, path string, bound time.Duration) time.Duration {
	code, body, lat, err := a.get(path)
	if err == nil && code != http.StatusOK {
		err = errors.New(string(body))
	}
	if err != nil || lat > bound {
		t.Errorf("GET %s during the overload: %d after %v (bound %v): %v", path, code, lat, bound, err)
		return -1
	}
	name := strings.SplitN(strings.TrimPrefix(path, "/"), "?", 2)[0]
	if strings.HasSuffix(name, "/messages") {
		name = "message feed"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == nil {
		p.n, p.worst = map[string]int{}, map[string]time.Duration{}
	}
	p.n[name]++
	p.worst[name] = max(p.worst[name], lat)
	return lat
}

func (p *probeStats) log(t *testing.T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range []string{"readyz", "message feed"} {
		t.Logf("API probes from the first connection to the last session: %s %d requests, slowest %v", name, p.n[name], p.worst[name].Round(time.Microsecond))
	}
}
