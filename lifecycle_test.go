package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGTERM ends long-polls at once with the answer an expired wait gives,
// instead of holding the shutdown for the whole wait (or the shutdown
// timeout) and then dropping them without a reply.
func TestShutdownEndsLongPolls(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--log-level", "debug", "--shutdown-timeout", "1m")
	c, project, inbox := adminAPI(t, data, s.http)
	api := &overloadAPI{base: "http://" + s.http, token: c.key, client: http.DefaultClient}
	if err := sendMail(s.smtp, "ann@example.com", []string{"inbox@localhost"}, "Message-ID: <d1@example.com>\r\nSubject: drain\r\n\r\nx\r\n"); err != nil {
		t.Fatal(err)
	}
	var threads struct{ Data []struct{ ID string } }
	api.getJSON(t, "/v1/projects/"+project+"/inboxes/"+inbox+"/threads", &threads)
	if len(threads.Data) != 1 {
		t.Fatalf("threads: %+v", threads)
	}
	var evs struct {
		NextCursor string `json:"next_cursor"`
	}
	api.getJSON(t, "/v1/projects/"+project+"/events", &evs)
	// Both ask for what comes after everything there is: only a new
	// message or event, or the end of the wait, answers them.
	polls := []string{
		"/v1/projects/" + project + "/inboxes/" + inbox + "/threads/" + threads.Data[0].ID + "/messages?after_sequence=1",
		"/v1/projects/" + project + "/events?after=" + evs.NextCursor,
	}
	type answer struct {
		code int
		body []byte
		err  error
	}
	empty := make([]string, len(polls))
	answers := make([]chan answer, len(polls))
	for i, p := range polls {
		code, body, _, err := api.get(p + "&wait=0") // what an expired wait answers
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: %d %v", p, code, err)
		}
		empty[i] = string(body)
		answers[i] = make(chan answer, 1)
		go func() {
			code, body, _, err := api.get(p + "&wait=60")
			answers[i] <- answer{code, body, err}
		}()
	}
	s.stderr.await(t, `msg="app: long-poll" op=thread_messages `)
	s.stderr.await(t, `msg="app: long-poll" op=events `)

	stopped := make(chan error, 1)
	go func() { stopped <- s.stop() }()
	for i, p := range polls {
		select {
		case a := <-answers[i]:
			if a.err != nil || a.code != http.StatusOK || string(a.body) != empty[i] {
				t.Errorf("long-poll %s at shutdown: %d %v %s, want 200 %s", p, a.code, a.err, a.body, empty[i])
			}
		case <-time.After(20 * time.Second): // far below the 60 s wait
			t.Fatalf("long-poll %s held the shutdown", p)
		}
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(20 * time.Second): // far below the 1 m shutdown timeout
		t.Fatal("run did not return")
	}
	if out := s.stderr.String(); strings.Contains(out, "http shutdown") {
		t.Errorf("the HTTP shutdown waited for its timeout:\n%s", out)
	}
}

// Two servers on one data directory would both run the queues (every
// webhook and send twice): the second is refused and names the first.
func TestOneServerPerDataDir(t *testing.T) {
	data := t.TempDir()
	first := startServer(t, data)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := newSyncBuffer(startedPattern)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--data", data, "--smtp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"},
			func(string) string { return "" }, io.Discard, stderr)
	}()
	select {
	case err := <-done:
		want := fmt.Sprintf("data directory %s is in use by another inboxd (pid %d)", data, os.Getpid())
		if err == nil || err.Error() != want {
			t.Fatalf("second server: %v, want %q", err, want)
		}
	case <-stderr.found:
		t.Fatalf("a second server started on the same data directory:\n%s", stderr.String())
	}
	// The CLI opens the database directly; it works beside the server.
	if err := run(context.Background(), []string{"inboxes", "list", "--data", data}, func(string) string { return "" }, io.Discard, io.Discard); err != nil {
		t.Fatalf("inboxes list beside the server: %v", err)
	}
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	startServer(t, data).stop() // the lock went with the first server
}

// A flag or file that cannot work is reported before anything is created:
// a first start that fails leaves no data directory behind.
func TestBadFlagsCreateNothing(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing TLS files", []string{"--tls-cert", filepath.Join(dir, "none.crt"), "--tls-key", filepath.Join(dir, "none.key")}, "TLS certificate"},
		{"TLS file not PEM", []string{"--tls-cert", notPEM, "--tls-key", notPEM}, "TLS certificate"},
		{"relay URL", []string{"--outbound", "relay", "--relay-url", "http://relay.example.com"}, "relay URL"},
		{"relay CA file", []string{"--outbound", "relay", "--relay-url", "smtp://relay.example.com", "--relay-ca-file", filepath.Join(dir, "none.pem")}, "relay CA file"},
		{"message id pattern", []string{"--relay-message-id-pattern", "("}, "--relay-message-id-pattern"},
		{"message id pattern groups", []string{"--relay-message-id-pattern", "id=[a-z]+"}, "--relay-message-id-pattern"},
		{"log level", []string{"--log-level", "loud"}, "--log-level"},
		{"http address", []string{"--http-addr", "nonsense"}, "--http-addr"},
		{"metrics address port", []string{"--metrics-addr", "127.0.0.1:99999"}, "--metrics-addr"},
		{"smtps address", []string{"--smtp-tls-self-signed", "--smtps-addr", "127.0.0.1:smtps-please"}, "--smtps-addr"},
		{"dkim key file", []string{"--outbound", "direct", "--dkim-key", "localhost:sel1:" + filepath.Join(dir, "none.pem")}, "--dkim-key"},
		{"dkim key not a key", []string{"--outbound", "direct", "--dkim-key", "localhost:sel1:" + notPEM}, "--dkim-key"},
		{"dkim key form", []string{"--outbound", "direct", "--dkim-key", "localhost=" + notPEM}, "DOMAIN:SELECTOR:FILE"},
		{"dkim key without direct", []string{"--dkim-key", "localhost:sel1:" + notPEM}, "go with --outbound direct"},
		{"direct resolver", []string{"--outbound", "direct", "--direct-resolver", "nonsense"}, "--direct-resolver"},
		{"relay CA file without relay", []string{"--relay-ca-file", notPEM}, "--relay-ca-file goes with --outbound relay"},
		{"ACME CA file without ACME", []string{"--acme-ca-file", notPEM}, "--acme-ca-file goes with --acme-domain"},
		{"direct port", []string{"--outbound", "direct", "--direct-port", "99999"}, "--direct-port must be a port number"},
		{"direct port zero", []string{"--outbound", "direct", "--direct-port", "0"}, "--direct-port must be a port number"},
		{"accepted domain", []string{"--accept", "domain", "--domain", "not_a_domain!!"}, `--domain "not_a_domain!!" is not a domain name`},
		{"accepted domain with an empty label", []string{"--accept", "domain", "--domain", "x..example"}, "is not a domain name"},
		{"message id format", []string{"--outbound", "relay", "--relay-url", "smtp://relay.example.com", "--relay-message-id-format", "nopct"}, "--relay-message-id-format must hold one %s"},
		{"message id format verb", []string{"--relay-message-id-format", "%s@%d.example"}, "--relay-message-id-format must hold one %s"},
		{"acme directory", []string{"--acme-domain", "mail.example.com", "--acme-directory", "notaurl", "--http-addr", "127.0.0.1:0", "--acme-http-addr", ""}, "--acme-directory must be"},
		{"command timeout", []string{"--smtp-command-timeout", "-1s"}, "--smtp-command-timeout must be positive"},
		{"session timeout", []string{"--smtp-session-timeout", "0s"}, "--smtp-session-timeout must be positive"},
		{"recipients", []string{"--max-recipients", "-5"}, "--max-recipients must be 1 or more"},
		{"sessions", []string{"--max-sessions", "-1"}, "--max-sessions must be 0"},
		{"rate limit", []string{"--api-rate-limit", "-3"}, "--api-rate-limit must be 0"},
		{"body timeout", []string{"--http-body-timeout", "-1s"}, "--http-body-timeout must be 0"},
		{"shutdown timeout", []string{"--shutdown-timeout", "-1s"}, "--shutdown-timeout must be positive"},
		// flag stops at the first word that is not a flag, and would drop
		// the rest: here --hostname and the --accept after the "false".
		{"a true/false flag given its value apart", []string{"--smtp-auth-insecure", "false", "--hostname", "mx.example.org"}, `unexpected argument "false": a true/false flag takes its value after =, as --flag=false`},
		{"a stray word", []string{"extra", "--accept", "any"}, `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "inboxd-data")
			args := append([]string{"--data", data, "--smtp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, tc.args...)
			// Cancelled already: flags taken by mistake start a server that
			// stops at once, and the test fails instead of waiting on it.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := run(ctx, args, func(string) string { return "" }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run: %v, want an error about %s", err, tc.want)
			}
			if _, serr := os.Stat(data); !os.IsNotExist(serr) {
				entries, _ := os.ReadDir(data)
				t.Errorf("a failed start left the data directory (%v): %v", serr, entries)
			}
		})
	}
}

// A first start that fails on a busy port must not bootstrap the database:
// the next start is then the first, and writes and prints the admin key.
func TestFailedFirstStartKeepsTheAdminKey(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := filepath.Join(t.TempDir(), "inboxd-data")
	err = run(context.Background(), []string{"--data", data, "--smtp-addr", "127.0.0.1:0", "--http-addr", busy.Addr().String()},
		func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "http listen") {
		t.Fatalf("start on a busy port: %v", err)
	}
	s := startServer(t, data)
	if _, err := os.Stat(filepath.Join(data, "admin.key")); err != nil || !strings.Contains(s.stdout.String(), "admin key") {
		t.Fatalf("the start after the failed one: admin.key %v, printed %q", err, s.stdout.String())
	}
}

// `timeout 4 inboxd` (and many process managers) signal the child and its
// process group, so the signal can arrive twice: a repeat within a second
// is the same request, not the operator asking again, and the shutdown
// stays graceful.
func TestRepeatedSIGTERMShutsDownGracefully(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	bin := buildBinary(t)
	log := newSyncBuffer("")
	cmd, _, _ := startChildLog(t, bin, t.TempDir(), log)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Taken by the server: the next one is not merged with it by the kernel.
	log.await(t, `msg="shutting down"`)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after a repeated SIGTERM: %v\n%s", err, log.String())
	}
}

// The decision of main's signal goroutine: the first signal stops the
// server; one less than a second later is the same request again; one at
// least a second later forces the exit (code 2). The clock is fed by the
// test, one reading per signal, so nothing depends on real time.
func TestSignalsForceExitOnlyAfterASecond(t *testing.T) {
	sigs := make(chan os.Signal) // unbuffered: a send returns once the signal is taken
	readings := make(chan time.Time)
	stopped, done := make(chan struct{}), make(chan struct{})
	exits := make(chan int, 2)
	var out bytes.Buffer
	go func() {
		defer close(done)
		watchSignals(sigs, func() time.Time { return <-readings }, func() { close(stopped) }, &out, func(code int) { exits <- code })
	}()
	first := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	signal := func(s os.Signal, at time.Duration) {
		t.Helper()
		select {
		case sigs <- s:
		case <-done:
			t.Fatalf("watchSignals returned before %v at +%v (exits: %d)", s, at, len(exits))
		}
		readings <- first.Add(at)
	}
	signal(syscall.SIGTERM, 0)
	<-stopped
	signal(syscall.SIGTERM, 0) // the process group's copy
	signal(syscall.SIGINT, 999*time.Millisecond)
	signal(syscall.SIGTERM, time.Second)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a signal a second after the first did not force the exit")
	}
	if n := len(exits); n != 1 {
		t.Fatalf("%d exits, want 1", n)
	}
	if code := <-exits; code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if !strings.Contains(out.String(), "exiting now") {
		t.Errorf("no message on the forced exit: %q", out.String())
	}
}

// While SIGTERM waits for a transaction in DATA, HTTP still answers and
// /readyz says 503 (a load balancer sees the server stopping, not a
// refused connection); the transaction then gets its 250.
func TestReadyzIs503WhileStopping(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--shutdown-timeout", "1m")
	api, project, inbox := adminAPI(t, data, s.http)
	c, err := net.Dial("tcp", s.smtp)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tp := textproto.NewConn(c)
	expect := func(code int, cmd string) {
		t.Helper()
		if cmd != "" {
			if err := tp.PrintfLine("%s", cmd); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := tp.ReadResponse(code); err != nil {
			t.Fatalf("%q: %v", cmd, err)
		}
	}
	expect(220, "")
	expect(250, "EHLO client.test")
	expect(250, "MAIL FROM:<ann@example.com>")
	expect(250, "RCPT TO:<inbox@localhost>")
	expect(354, "DATA")
	fmt.Fprintf(c, "Subject: in flight\r\n\r\nstill being written\r\n")

	stopped := make(chan error, 1)
	go func() { stopped <- s.stop() }()
	// The SMTP listener closes once the drain has begun (after /readyz
	// turned to 503).
	for i := 0; ; i++ {
		probe, err := net.Dial("tcp", s.smtp)
		if err != nil {
			break
		}
		probe.Close()
		if i == 10000 {
			t.Fatal("the SMTP listener stayed open after SIGTERM")
		}
	}
	resp, err := http.Get("http://" + s.http + "/readyz")
	if err != nil {
		t.Fatalf("/readyz while stopping: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz while stopping: %d, want 503", resp.StatusCode)
	}
	// While SMTP drains, HTTP takes no new work: a send, a read, an MCP
	// call are refused (the listener stays open for /readyz alone).
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/projects/" + project + "/inboxes/" + inbox + "/messages", `{"to":["a@example.com"],"text":"x"}`},
		{"GET", "/v1/me", ""},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	} {
		req, _ := http.NewRequest(r.method, "http://"+s.http+r.path, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer "+api.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s while stopping: %v", r.method, r.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), `"code":"temporarily_unavailable"`) {
			t.Errorf("%s %s while stopping: %d %.200s", r.method, r.path, resp.StatusCode, b)
		}
	}
	expect(250, ".")
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
}
