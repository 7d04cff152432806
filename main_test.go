package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/goleak"

	"github.com/inboxd/inboxd/store"
)

// syncBuffer is a goroutine-safe buffer that signals when a pattern first
// appears, so tests wait on output instead of sleeping.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	pattern *regexp.Regexp
	found   chan []string
	grew    chan struct{} // closed (and replaced) by every Write
}

func newSyncBuffer(pattern string) *syncBuffer {
	return &syncBuffer{pattern: regexp.MustCompile(pattern), found: make(chan []string, 1), grew: make(chan struct{})}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	close(b.grew)
	b.grew = make(chan struct{})
	if b.pattern != nil {
		if m := b.pattern.FindStringSubmatch(b.buf.String()); m != nil {
			b.found <- m
			b.pattern = nil
		}
	}
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// await waits until the output matches pattern and returns the match; the
// 20 s guard fails a test that would otherwise hang.
func (b *syncBuffer) await(t testing.TB, pattern string) []string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	guard := time.After(20 * time.Second)
	for {
		b.mu.Lock()
		m, grew := re.FindStringSubmatch(b.buf.String()), b.grew
		b.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-grew:
		case <-guard:
			t.Fatalf("no %q in the output:\n%s", pattern, b.String())
		}
	}
}

const startedPattern = `msg="inboxd started".* smtp=(\S+) http=(\S+)`

// running is a server started in-process by startServer.
type running struct {
	smtp, http string // the bound addresses
	srv        *server
	stdout     *syncBuffer
	stderr     *syncBuffer
	stop       func() error // Run's result; later calls return it again
}

// startServer builds a server on free ports with newServer and runs it;
// the addresses come from the server itself.
func startServer(t testing.TB, data string, extra ...string) *running {
	t.Helper()
	stdout, stderr := newSyncBuffer(""), newSyncBuffer("")
	args := append([]string{"--data", data, "--smtp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, extra...)
	c, log, err := serveConfig(args, func(string) string { return "" }, stderr)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := newServer(context.Background(), c, log, stdout)
	if err != nil {
		t.Fatalf("newServer: %v\n%s", err, stderr.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var runErr error
	go func() { defer close(done); runErr = srv.Run(ctx) }()
	r := &running{smtp: srv.SMTPAddr(), http: srv.HTTPAddr(), srv: srv, stdout: stdout, stderr: stderr}
	var once sync.Once
	r.stop = func() error {
		once.Do(func() {
			cancel()
			<-done
			if err := srv.Close(); err != nil && runErr == nil {
				runErr = err
			}
		})
		return runErr
	}
	t.Cleanup(func() { r.stop() })
	return r
}

func sendMail(addr, from string, to []string, body string) error {
	c, err := gosmtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SendMail(from, to, strings.NewReader(body)); err != nil {
		return err
	}
	return c.Quit()
}

func openStore(t *testing.T, data string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), store.Options{Path: filepath.Join(data, "inboxd.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestFirstStartAndRestart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "inboxd-data")
	s := startServer(t, data)
	out := s.stdout.String()
	key, err := os.ReadFile(filepath.Join(data, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSuffix(string(key), "\n")
	if !strings.HasPrefix(token, "inboxd_") || !strings.Contains(out, token) || !strings.Contains(out, "inbox@localhost") ||
		!strings.Contains(out, "swaks") || !strings.Contains(out, "prj_") {
		t.Fatalf("first start printed:\n%s", out)
	}
	if fi, _ := os.Stat(filepath.Join(data, "admin.key")); fi.Mode().Perm() != 0o600 {
		t.Errorf("admin.key mode %v", fi.Mode().Perm())
	}
	resp, err := http.Get("http://" + s.http + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	resp.Body.Close()
	metrics := metricsText(t, s.http, data)
	if !strings.Contains(metrics, "inboxd_deferred_messages 0") || !strings.Contains(metrics, "inboxd_deferred_wait_seconds_count 0") {
		t.Errorf("metrics lack the deferred lookup:\n%.2000s", metrics)
	}
	if err := sendMail(s.smtp, "a@example.com", []string{"inbox@localhost"}, "Subject: hi\r\n\r\nhello\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}

	s2 := startServer(t, data)
	if out := s2.stdout.String(); out != "" {
		t.Errorf("second start printed %q", out)
	}
	s2.stop()
	db := openStore(t, data)
	k, err := db.KeyByToken(context.Background(), token)
	if err != nil || len(k.Scopes) != len(store.AllScopes()) {
		t.Fatalf("admin key: %+v %v", k, err)
	}
}

// The admin token is kept in admin.key before the bootstrap that made it
// commits: a first start that cannot write the file makes no project, and
// the next one makes it and shows its key, instead of finding a project
// whose admin key no one was given.
func TestFirstStartThatCannotKeepTheAdminKey(t *testing.T) {
	data := filepath.Join(t.TempDir(), "inboxd-data")
	blocker := filepath.Join(data, "admin.key")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil { // a directory where the file goes
		t.Fatal(err)
	}
	c, log, err := serveConfig([]string{"--data", data, "--smtp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if srv, err := newServer(context.Background(), c, log, &out); err == nil || !strings.Contains(err.Error(), "write admin key") {
		if srv != nil {
			srv.Close()
		}
		t.Fatalf("newServer: %v, want the admin key's write error", err)
	}
	if out.Len() != 0 {
		t.Errorf("the failed start printed %q", out.String())
	}
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, data)
	key, err := os.ReadFile(blocker)
	if err != nil || !strings.Contains(s.stdout.String(), strings.TrimSpace(string(key))) {
		t.Fatalf("the next start: admin.key %q (%v), printed:\n%s", key, err, s.stdout.String())
	}
	if entries, _ := os.ReadDir(data); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), ".admin.key") }) {
		t.Errorf("a temporary file is left: %v", entries)
	}
	s.stop()
	keys, err := openStore(t, data).ListKeys(context.Background(), s.srv.project)
	if err != nil || len(keys) != 1 {
		t.Errorf("keys after the two starts: %+v %v", keys, err)
	}
}

func TestHelpListsEveryFlagWithEnv(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"help"}, os.Getenv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--data (INBOXD_DATA, default ./inboxd-data)", "--smtp-addr (INBOXD_SMTP_ADDR, default 127.0.0.1:1025)",
		"--http-addr (INBOXD_HTTP_ADDR, default 127.0.0.1:8025)", "INBOXD_FSYNC", "INBOXD_ACCEPT"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestEnvironmentConfiguresServe(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := newSyncBuffer(`"msg":"inboxd started"`)
	env := map[string]string{"INBOXD_DATA": data, "INBOXD_SMTP_ADDR": "127.0.0.1:0", "INBOXD_HTTP_ADDR": "127.0.0.1:0", "INBOXD_LOG_FORMAT": "json"}
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, func(k string) string { return env[k] }, io.Discard, stderr) }()
	select {
	case err := <-done:
		t.Fatalf("exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatalf("no JSON startup line: %s", stderr.String())
	case <-stderr.found:
	}
	if _, err := os.Stat(filepath.Join(data, "inboxd.db")); err != nil {
		t.Fatalf("INBOXD_DATA ignored: %v", err)
	}
	if !strings.Contains(stderr.String(), `"msg":"inboxd started"`) {
		t.Fatalf("INBOXD_LOG_FORMAT ignored: %s", stderr.String())
	}
	cancel()
	<-done
}

// A bad value names where it came from: the variable when the variable
// set it, the flag (with two dashes, like every message) when the
// command line did.
func TestBadValueNamesItsSource(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"INBOXD_ACCEPT": "bogus"}, `--accept must be known, domain or any, not "bogus" (set by INBOXD_ACCEPT)`},
		{nil, map[string]string{"INBOXD_LOG_LEVEL": "loud"}, "(set by INBOXD_LOG_LEVEL)"},
		{[]string{"--accept=bad"}, map[string]string{"INBOXD_ACCEPT": "bogus"}, `--accept must be known, domain or any, not "bad"`},
		{[]string{"--max-sessions", "x"}, nil, `invalid value "x" for --max-sessions`},
		{nil, map[string]string{"INBOXD_MAX_SESSIONS": "x"}, `invalid value "x" for INBOXD_MAX_SESSIONS`},
	} {
		data := filepath.Join(t.TempDir(), "d")
		err := run(context.Background(), append([]string{"--data", data}, tc.args...), func(k string) string { return tc.env[k] }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.HasSuffix(tc.want, `"bad"`) && strings.Contains(err.Error(), "set by") {
			t.Errorf("%v %v: %v, want %s", tc.args, tc.env, err, tc.want)
		}
		if _, serr := os.Stat(data); serr == nil {
			t.Errorf("%v %v: the data directory was created", tc.args, tc.env)
		}
	}
}

func TestCLI(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data)
	cli := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(context.Background(), append(args, "--data", data), func(string) string { return "" }, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out.String()
	}
	// Works while the server runs.
	created := cli("inboxes", "create", "Agent@Example.com", "--display-name", "Agent")
	id := strings.Fields(created)[0]
	if !strings.HasPrefix(id, "ibx_") {
		t.Fatalf("create: %q", created)
	}
	if err := sendMail(s.smtp, "a@example.com", []string{"agent@example.com"}, "Subject: hi\r\n\r\nx\r\n"); err != nil {
		t.Fatalf("mail to CLI-created inbox: %v", err)
	}
	if list := cli("inboxes", "list"); !strings.Contains(list, "agent@example.com") || !strings.Contains(list, "inbox@localhost") {
		t.Fatalf("list: %q", list)
	}
	keyOut := cli("keys", "create", "--name", "ci", "--scopes", "messages:read,threads:read", "--inboxes", id)
	fields := strings.Fields(keyOut)
	if len(fields) != 2 || !strings.HasPrefix(fields[0], "key_") || !strings.HasPrefix(fields[1], "inboxd_") {
		t.Fatalf("keys create: %q", keyOut)
	}
	if list := cli("keys", "list"); !strings.Contains(list, fields[0]) || !strings.Contains(list, id) || strings.Contains(list, fields[1]) {
		t.Fatalf("keys list: %q", list)
	}
	cli("keys", "revoke", fields[0])
	if list := cli("keys", "list"); strings.Contains(list, fields[0]) {
		t.Fatalf("revoked key listed: %q", list)
	}
	cli("inboxes", "delete", "agent@example.com")
	// A word a command does not take is refused, before it does anything.
	for _, args := range [][]string{{"keys", "list", "extra"}, {"inboxes", "list", "x"}, {"keys", "create", "--scopes", "all", "false"}, {"version", "extra"}} {
		var out bytes.Buffer
		err := run(context.Background(), append(args, "--data", data), func(string) string { return "" }, &out, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "unexpected argument") || out.Len() != 0 {
			t.Errorf("%v: %v, printed %q", args, err, out.String())
		}
	}
	if err := sendMail(s.smtp, "a@example.com", []string{"agent@example.com"}, "Subject: hi\r\n\r\nx\r\n"); err == nil {
		t.Fatal("mail accepted for a deleted inbox")
	}
}

// Real clients nobody here wrote: Python's smtplib (with STARTTLS and
// SMTPUTF8) and curl. Each message must be stored byte for byte.
func TestRealClients(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--smtp-tls-self-signed", "--accept", "any")
	host, port, _ := strings.Cut(s.smtp, ":")
	db := openStore(t, data)

	pyBody := "From: Zoë <zoe@exämple.com>\r\nTo: ünïcode@localhost\r\nSubject: Grüße 東京\r\nMessage-ID: <py1@example.com>\r\n\r\nBody with ümlauts.\r\n"
	script := fmt.Sprintf(`
import smtplib, ssl, sys
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
s = smtplib.SMTP(%q, %s)
s.ehlo(); s.starttls(context=ctx); s.ehlo()
assert s.has_extn("smtputf8"), "no SMTPUTF8"
s.sendmail("zoë@exämple.com", ["ünïcode@localhost"], sys.stdin.buffer.read(), mail_options=["SMTPUTF8"])
s.quit()
`, host, port)
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = strings.NewReader(pyBody)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python smtplib: %v\n%s", err, out)
	}
	assertStored(t, db, "ünïcode@localhost", pyBody, true)

	curlBody := "From: curl@example.com\r\nTo: inbox@localhost\r\nSubject: from curl\r\nMessage-ID: <curl1@example.com>\r\n\r\nsent by curl\r\n"
	f := filepath.Join(t.TempDir(), "mail.eml")
	os.WriteFile(f, []byte(curlBody), 0o644)
	cmd = exec.Command("curl", "-sS", "--url", "smtp://"+s.smtp, "--mail-from", "curl@example.com", "--mail-rcpt", "inbox@localhost", "--upload-file", f)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	assertStored(t, db, "inbox@localhost", curlBody, false)
}

func assertStored(t *testing.T, db *store.DB, address, body string, tls bool) {
	t.Helper()
	ctx := context.Background()
	ib, err := db.InboxByAddress(ctx, address)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := db.InboxMessages(ctx, ib.ID)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("no message in %s: %v", address, err)
	}
	raw, err := db.Raw(ctx, msgs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	trace, stored, ok := strings.Cut(string(raw), "\r\n\t")
	if !ok || !strings.HasPrefix(trace, "Received: ") {
		t.Fatalf("no trace header: %q", raw)
	}
	if !strings.HasSuffix(string(raw), body) || len(raw)-len(body) > 200 {
		t.Fatalf("stored bytes:\n%q\nwant (after trace)\n%q", stored, body)
	}
	env, err := db.Envelope(ctx, msgs[0].ID)
	if err != nil || env.TLS != tls {
		t.Fatalf("envelope %+v %v", env, err)
	}
}

// TestMain removes the binary buildBinary made for the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if testBinary.dir != "" {
		os.RemoveAll(testBinary.dir)
	}
	os.Exit(code)
}

// testBinary is the inboxd binary of this test run: linking it takes
// seconds, so it is built once, by the first test that runs a child process.
var testBinary struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildBinary returns the path of the run's inboxd binary.
func buildBinary(t *testing.T) string {
	t.Helper()
	testBinary.once.Do(func() {
		if testBinary.dir, testBinary.err = os.MkdirTemp("", "inboxd-test-"); testBinary.err != nil {
			return
		}
		testBinary.path = filepath.Join(testBinary.dir, "inboxd")
		if out, err := exec.Command("go", "build", "-o", testBinary.path, ".").CombinedOutput(); err != nil {
			testBinary.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if testBinary.err != nil {
		t.Fatalf("build: %v", testBinary.err)
	}
	return testBinary.path
}

// startChild runs the binary as a real child process (so it can be
// killed with SIGKILL) and returns its SMTP and HTTP addresses.
func startChild(t *testing.T, bin, data string, extra ...string) (cmd *exec.Cmd, smtpAddr, httpAddr string) {
	t.Helper()
	return startChildLog(t, bin, data, io.Discard, extra...)
}

// startChildLog is startChild that copies the log after the startup line
// to rest.
func startChildLog(t *testing.T, bin, data string, rest io.Writer, extra ...string) (cmd *exec.Cmd, smtpAddr, httpAddr string) {
	t.Helper()
	cmd = exec.Command(bin, append([]string{"--data", data, "--smtp-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, extra...)...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The startup line is awaited for 30 s at most: a child that runs
	// without printing it (a changed log line) must fail the test, not
	// hang the run until go test's timeout.
	type addrs struct{ smtp, http string }
	found := make(chan addrs, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(startedPattern)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- addrs{m[1], m[2]}
				io.Copy(rest, stderr)
				return
			}
		}
		close(found)
	}()
	select {
	case a, ok := <-found:
		if !ok {
			t.Fatal("child exited before it started")
		}
		return cmd, a.smtp, a.http
	case <-time.After(30 * time.Second):
		t.Fatalf("child printed no line matching %q in 30 s", startedPattern)
	}
	return nil, "", ""
}

// TestKillDuringLoad is the durability rule: every message that got a 250
// is in the database after a SIGKILL, and no message is half-stored.
func TestKillDuringLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a child process")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	cmd, addr, _ := startChild(t, bin, data)
	const clients = 8
	var mu sync.Mutex
	var acked []string
	killAt := make(chan struct{})
	var killOnce sync.Once
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			c, err := gosmtp.Dial(addr)
			if err != nil {
				return
			}
			defer c.Close()
			for j := 0; ; j++ {
				id := fmt.Sprintf("k%d.%d@example.com", i, j)
				body := fmt.Sprintf("Message-ID: <%s>\r\nSubject: %d\r\n\r\n%s\r\n", id, j, strings.Repeat("durable ", 200))
				if err := c.SendMail("a@example.com", []string{"inbox@localhost"}, strings.NewReader(body)); err != nil {
					return // the server died
				}
				mu.Lock()
				acked = append(acked, "<"+id+">")
				if len(acked) == 300 {
					killOnce.Do(func() { close(killAt) })
				}
				mu.Unlock()
			}
		})
	}
	<-killAt
	cmd.Process.Kill()
	cmd.Wait()
	wg.Wait()

	db := openStore(t, data)
	ib, err := db.InboxByAddress(context.Background(), "inbox@localhost")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := db.InboxMessages(context.Background(), ib.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, m := range msgs {
		stored[m.RFCMessageID] = true
		if _, err := db.Raw(context.Background(), m.ID); err != nil {
			t.Errorf("message %s without raw: %v", m.ID, err)
		}
		if _, err := db.GetBody(context.Background(), m.ID); err != nil {
			t.Errorf("message %s without body: %v", m.ID, err)
		}
	}
	for _, id := range acked {
		if !stored[id] {
			t.Errorf("acknowledged %s lost", id)
		}
	}
	t.Logf("acked %d, stored %d", len(acked), len(msgs))
}

// TestSMTPToAPI is the end-to-end path: real SMTP in, the HTTP API out,
// including a long-poll woken by a message arriving over SMTP.
func TestSMTPToAPI(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data)
	c, project, inbox := adminAPI(t, data, s.http)
	get := func(path string, v any) {
		t.Helper()
		if err := c.do(context.Background(), "GET", path, nil, "", v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	base := "/v1/projects/" + project + "/inboxes/" + inbox

	if err := sendMail(s.smtp, "ann@example.com", []string{"inbox@localhost"},
		"From: Ann <ann@example.com>\r\nMessage-ID: <q1@example.com>\r\nSubject: Quote?\r\n\r\nCan you quote 100 chairs?\r\n"); err != nil {
		t.Fatal(err)
	}
	var threads struct {
		Data []struct {
			ID, Subject  string
			MessageCount int `json:"message_count"`
		}
	}
	get(base+"/threads", &threads)
	if len(threads.Data) != 1 || threads.Data[0].Subject != "Quote?" {
		t.Fatalf("threads: %+v", threads)
	}
	thread := base + "/threads/" + threads.Data[0].ID

	type page struct {
		Data []struct {
			ID       string
			Sequence int
			From     struct{ Email string }
		}
	}
	got := make(chan page, 1)
	go func() {
		var p page
		get(thread+"/messages?after_sequence=1&wait=30", &p)
		got <- p
	}()
	if err := sendMail(s.smtp, "ann@example.com", []string{"inbox@localhost"},
		"From: Ann <ann@example.com>\r\nMessage-ID: <q2@example.com>\r\nIn-Reply-To: <q1@example.com>\r\nSubject: Re: Quote?\r\n\r\nMake it 120.\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if len(p.Data) != 1 || p.Data[0].Sequence != 2 || p.Data[0].From.Email != "ann@example.com" {
			t.Fatalf("long-poll: %+v", p)
		}
		var body struct {
			Text          *string
			ExtractedText string `json:"extracted_text"`
		}
		get(base+"/messages/"+p.Data[0].ID+"/body", &body)
		if body.Text == nil || body.ExtractedText != "Make it 120." {
			t.Fatalf("body: %+v", body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("long-poll was not woken by the SMTP delivery")
	}
}

// Submission: a session authenticated with an API key that has
// messages:send may address the world through the send path; without the
// key it reaches only local inboxes. The CLI sends through the API.
func TestSubmissionAndSendCLI(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--smtp-auth-insecure")
	token, _ := os.ReadFile(filepath.Join(data, "admin.key"))
	key := strings.TrimSpace(string(token))
	db := openStore(t, data)
	ib, err := db.InboxByAddress(context.Background(), "inbox@localhost")
	if err != nil {
		t.Fatal(err)
	}
	submit := func(user, pass, from, to string) error {
		c, err := gosmtp.Dial(s.smtp)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if pass != "" {
			if err := c.Auth(sasl.NewPlainClient("", user, pass)); err != nil {
				return err
			}
		}
		return c.SendMail(from, []string{to}, strings.NewReader("From: "+from+"\r\nTo: "+to+"\r\nSubject: submitted\r\n\r\nhello world\r\n"))
	}
	if err := submit("", "", "inbox@localhost", "someone@example.org"); err == nil {
		t.Fatal("unauthenticated session relayed to the world")
	}
	if err := submit("me", key, "inbox@localhost", "someone@example.org"); err != nil {
		t.Fatalf("submission: %v", err)
	}
	err = submit("me", key, "ceo@example.org", "someone@example.org")
	var se *gosmtp.SMTPError
	if !errors.As(err, &se) || se.Code != 550 {
		t.Fatalf("foreign From: %v", err)
	}
	msgs, _ := db.InboxMessages(context.Background(), ib.ID)
	if len(msgs) != 1 || msgs[0].Direction != "outbound" || msgs[0].State != "captured" || msgs[0].Subject != "submitted" {
		t.Fatalf("submitted message: %+v", msgs)
	}

	var out bytes.Buffer
	err = run(context.Background(), []string{"send", "--url", "http://" + s.http, "--data", data, "--to", "bob@example.com",
		"--subject", "from the CLI", "--text", "hi"}, func(string) string { return "" }, &out, io.Discard)
	if err != nil || !strings.Contains(out.String(), `"result":"queued"`) {
		t.Fatalf("inboxd send: %v %s", err, out.String())
	}
}

// An idempotent send survives kill -9: after a restart the same request
// answers the original message_id and thread_id, and the message is
// delivered once.
func TestIdempotentSendSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a child process")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	cmd, _, httpAddr := startChild(t, bin, data)
	c, project, inbox := adminAPI(t, data, httpAddr)
	ctx := context.Background()
	base := "/v1/projects/" + project + "/inboxes/" + inbox
	// To itself: the local copy lands in the sender's thread as an echo,
	// where a long-poll can wait for it.
	body := map[string]any{"to": []string{"inbox@localhost"}, "subject": "once", "text": "exactly once"}
	var first map[string]any
	if err := c.do(ctx, "POST", base+"/messages", body, "crash-1", &first); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	cmd.Wait()

	_, _, httpAddr = startChild(t, bin, data)
	c.base = "http://" + httpAddr
	var again map[string]any
	if err := c.do(ctx, "POST", base+"/messages", body, "crash-1", &again); err != nil {
		t.Fatal(err)
	}
	if again["message_id"] != first["message_id"] || again["thread_id"] != first["thread_id"] {
		t.Fatalf("after restart: %v, first: %v", again, first)
	}
	thread := base + "/threads/" + first["thread_id"].(string) + "/messages"
	var page struct {
		Data []struct {
			Direction string
			Echo      bool
		}
	}
	if err := c.do(ctx, "GET", thread+"?after_sequence=1&wait=30", nil, "", &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || !page.Data[0].Echo {
		t.Fatalf("local copy: %+v", page)
	}
	if err := c.do(ctx, "GET", thread+"?after_sequence=2&wait=1", nil, "", &page); err != nil || len(page.Data) != 0 {
		t.Fatalf("delivered twice: %+v %v", page, err)
	}
}

// The whole path: mail over SMTP → message.received → a signed webhook
// POSTed to a real HTTP receiver, verified by the Standard Webhooks
// library; then a clean shutdown.
func TestSMTPToSignedWebhook(t *testing.T) {
	// Whatever runs now is not the server's; everything the server starts
	// must be gone once it has stopped.
	before := goleak.IgnoreCurrent()
	data := t.TempDir()
	s := startServer(t, data)
	c, project, _ := adminAPI(t, data, s.http)
	ctx := context.Background()

	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer recv.Close()

	var ep struct{ ID, Secret string }
	if err := c.do(ctx, "POST", "/v1/projects/"+project+"/webhooks", map[string]any{"url": recv.URL,
		"event_types": []string{"message.received"}}, "", &ep); err != nil {
		t.Fatal(err)
	}
	// An event-log consumer long-polls from its cursor while the mail
	// arrives over SMTP.
	var start struct {
		NextCursor string `json:"next_cursor"`
	}
	if err := c.do(ctx, "GET", "/v1/projects/"+project+"/events", nil, "", &start); err != nil {
		t.Fatal(err)
	}
	polled := make(chan []struct{ Type string }, 1)
	go func() {
		var p struct{ Data []struct{ Type string } }
		c.do(ctx, "GET", "/v1/projects/"+project+"/events?wait=30&after="+start.NextCursor, nil, "", &p)
		polled <- p.Data
	}()
	if err := sendMail(s.smtp, "ann@example.com", []string{"inbox@localhost"}, "Message-ID: <hook@example.com>\r\nSubject: hook\r\n\r\nhello\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-polled:
		if len(evs) != 1 || evs[0].Type != "message.received" {
			t.Fatalf("events wait answered %+v", evs)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("events wait was not woken by the SMTP delivery")
	}
	var r *http.Request
	select {
	case r = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("no webhook")
	}
	body := <-bodies
	wh, err := standardwebhooks.NewWebhook(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, r.Header); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var ev struct {
		ID, Type string
		Data     struct {
			MessageID string `json:"message_id"`
			Sequence  int
		}
	}
	json.Unmarshal(body, &ev)
	if ev.Type != "message.received" || ev.ID != r.Header.Get("webhook-id") || !strings.HasPrefix(ev.Data.MessageID, "msg_") ||
		ev.Data.Sequence != 1 || !strings.HasPrefix(r.Header.Get("User-Agent"), "inboxd/") {
		t.Fatalf("webhook: %s %v", body, r.Header)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	// The test's own clients and receiver go too, then nothing may be left.
	recv.Close()
	c.http.CloseIdleConnections()
	goleak.VerifyNone(t, before)
}

// kill -9 with 1,000 undelivered webhook deliveries queued: after a
// restart every event is delivered; events committed = events delivered.
func TestWebhookDeliveriesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a child process")
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	all := make(chan struct{})
	var allOnce sync.Once
	stuck := make(chan struct{}) // the receiver hangs until the restart
	accepting := make(chan struct{})
	defer close(stuck)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-accepting:
		case <-stuck:
			return
		case <-r.Context().Done():
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen[r.Header.Get("webhook-id")] = true
		if len(seen) == 1000 {
			allOnce.Do(func() { close(all) }) // at least once: duplicates may follow
		}
	}))
	defer recv.Close()

	bin := buildBinary(t)
	data := t.TempDir()
	cmd, smtpAddr, httpAddr := startChild(t, bin, data)
	c, project, _ := adminAPI(t, data, httpAddr)
	ctx := context.Background()
	var ep struct{ ID string }
	if err := c.do(ctx, "POST", "/v1/projects/"+project+"/webhooks", map[string]any{"url": recv.URL}, "", &ep); err != nil {
		t.Fatal(err)
	}
	sc, err := gosmtp.Dial(smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := sc.SendMail("a@example.com", []string{"inbox@localhost"}, strings.NewReader(fmt.Sprintf("Message-ID: <w%d@x>\r\nSubject: %d\r\n\r\nx\r\n", i, i))); err != nil {
			t.Fatal(err)
		}
	}
	sc.Close()
	// At most 4 requests hang in the receiver; the rest wait in the queue.
	cmd.Process.Kill()
	cmd.Wait()

	close(accepting)
	startChild(t, bin, data)
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		mu.Lock()
		t.Fatalf("%d of 1000 events delivered after the restart", len(seen))
	}
	db := openStore(t, data)
	committed, err := db.Events(ctx, store.EventFilter{ProjectID: project}, 5000)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(committed) != len(seen) {
		t.Fatalf("events committed %d, delivered %d", len(committed), len(seen))
	}
	for _, e := range committed {
		var env struct{ ID string }
		json.Unmarshal(e.Body, &env)
		if !seen[env.ID] {
			t.Fatalf("event %s never delivered", env.ID)
		}
	}
}

// --debug-addr serves Go's profiles on a listener of its own, never on the
// API's, and shuts down with the server.
func TestDebugAddrServesPprof(t *testing.T) {
	s := startServer(t, t.TempDir(), "--debug-addr", "127.0.0.1:0")
	debug := s.srv.DebugAddr()
	resp, err := http.Get("http://" + debug + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Fatalf("debug listener: %d %.200s", resp.StatusCode, body)
	}
	resp, err = http.Get("http://" + s.http + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the API listener serves /debug/pprof/: %d", resp.StatusCode)
	}
	if err := s.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := http.Get("http://" + debug + "/debug/pprof/"); err == nil {
		t.Error("the debug listener still answers after shutdown")
	}
}

// adminAPI returns an API client with the admin key of data, the project
// it belongs to and the inbox the first start created.
func adminAPI(t testing.TB, data, httpAddr string) (c apiClient, project, inbox string) {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(data, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	c = apiClient{base: "http://" + httpAddr, key: strings.TrimSpace(string(tok)), http: http.DefaultClient}
	ctx := context.Background()
	var me struct {
		ProjectID string `json:"project_id"`
	}
	if err := c.do(ctx, "GET", "/v1/me", nil, "", &me); err != nil {
		t.Fatal(err)
	}
	var inboxes struct {
		Data []struct{ ID, Address string }
	}
	if err := c.do(ctx, "GET", "/v1/projects/"+me.ProjectID+"/inboxes", nil, "", &inboxes); err != nil {
		t.Fatal(err)
	}
	if len(inboxes.Data) != 1 || inboxes.Data[0].Address != "inbox@localhost" {
		t.Fatalf("inboxes: %+v", inboxes)
	}
	return c, me.ProjectID, inboxes.Data[0].ID
}

// The JSON log writes a duration as the text log does ("7ms"), not as
// integer nanoseconds.
func TestJSONLogDurations(t *testing.T) {
	var b bytes.Buffer
	log, err := newLogger(&Config{LogFormat: "json", LogLevel: "info"}, &b)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("retention", "took", 7*time.Millisecond)
	if !strings.Contains(b.String(), `"took":"7ms"`) {
		t.Errorf("log line: %s", b.String())
	}
}
