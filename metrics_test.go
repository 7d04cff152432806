package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape reads a Prometheus text exposition into "name{labels}" → value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// After known traffic every counter says what happened: 10 messages
// stored and 2 sent again (duplicates, answered 250 and not stored twice),
// 3 recipients refused with 550, 4 API calls, one send captured and its
// event delivered to a webhook once; /metrics is served on
// --metrics-addr alone, and no label names an address, inbox or key.
func TestMetricsCountTraffic(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--metrics-addr", "127.0.0.1:0")
	mail := func(i int) string {
		return fmt.Sprintf("From: a@example.com\r\nTo: inbox@localhost\r\nMessage-ID: <m%d@example.com>\r\nSubject: %d\r\n\r\nbody %d\r\n", i, i, i)
	}
	for i := range 10 {
		if err := sendMail(s.smtp, "a@example.com", []string{"inbox@localhost"}, mail(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if err := sendMail(s.smtp, "a@example.com", []string{"inbox@localhost"}, mail(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if err := sendMail(s.smtp, "a@example.com", []string{fmt.Sprintf("nobody%d@localhost", i)}, mail(100+i)); err == nil {
			t.Fatal("an unknown recipient was accepted")
		}
	}
	c, project, inbox := adminAPI(t, data, s.http) // one GET /v1/me
	for range 3 {
		var me map[string]any
		if err := c.do(t.Context(), "GET", "/v1/me", nil, "", &me); err != nil {
			t.Fatal(err)
		}
	}
	// A made-up method is counted as "other", not as a series of its own.
	if req, err := http.NewRequest("FOO1", "http://"+s.http+"/v1/me", nil); err != nil {
		t.Fatal(err)
	} else if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if resp, err := http.Get("http://" + s.http + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics beside the API with --metrics-addr: %v %v", resp.StatusCode, err)
	}

	// A send to the world (captured) and a webhook delivered once.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer hook.Close()
	ctx := t.Context()
	if err := c.do(ctx, "POST", "/v1/projects/"+project+"/webhooks", map[string]any{"url": hook.URL, "event_types": []string{"message.queued"}}, "", &map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := c.do(ctx, "POST", "/v1/projects/"+project+"/inboxes/"+inbox+"/messages", map[string]any{"to": []string{"bob@example.com"}, "text": "hi"}, "", &map[string]any{}); err != nil {
		t.Fatal(err)
	}
	db := s.srv.db
	for {
		changed := db.Changed()
		n, err := db.WebhookDeliveryCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n["delivered"] == 1 {
			break
		}
		select {
		case <-changed:
		case <-time.After(20 * time.Second):
			t.Fatalf("webhook deliveries %v", n)
		}
	}

	m := scrape(t, "http://"+s.srv.MetricsAddr()+"/metrics")
	for name, want := range map[string]float64{
		`inboxd_smtp_sessions_total`:                                                         15,
		`inboxd_smtp_messages_total{result="accepted"}`:                                      12,
		`inboxd_duplicates_total`:                                                            2,
		`inboxd_smtp_rejections_total{code="550"}`:                                           3,
		`inboxd_smtp_ingest_duration_seconds_count`:                                          12,
		`inboxd_http_request_duration_seconds_count{code="200",method="GET",route="/v1/me"}`: 4,
		`inboxd_deferred_messages`:                                                           0,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if m[`inboxd_smtp_received_bytes_total`] < 12*float64(len(mail(0))) {
		t.Errorf("received bytes %v for 12 messages of %d", m[`inboxd_smtp_received_bytes_total`], len(mail(0)))
	}
	// 10 message.received, 1 message.queued, 1 message.captured.
	if got := m[`inboxd_events_total`]; got != 12 {
		t.Errorf("inboxd_events_total = %v, want 12", got)
	}
	if m[`inboxd_ingest_batch_size_count`] < 1 || m[`inboxd_ingest_batch_size_sum`] < 11 {
		t.Errorf("group commits: %v batches of %v requests in all", m[`inboxd_ingest_batch_size_count`], m[`inboxd_ingest_batch_size_sum`])
	}
	if n := m[`inboxd_ingest_commit_duration_seconds_count`]; n != m[`inboxd_ingest_batch_size_count`] || m[`inboxd_ingest_commit_duration_seconds_sum`] <= 0 {
		t.Errorf("commit durations: %v observed for %v group commits, %v s in all", n, m[`inboxd_ingest_batch_size_count`], m[`inboxd_ingest_commit_duration_seconds_sum`])
	}
	// Captured mail is never relayed: no attempts, but every result is
	// there at 0 for rate() and alerts.
	for _, r := range []string{"sent", "deferred", "bounced", "failed"} {
		if got, ok := m[`inboxd_outbound_attempts_total{result="`+r+`"}`]; !ok || got != 0 {
			t.Errorf("outbound attempts %s = %v (present %v), want 0", r, got, ok)
		}
	}
	other := false
	for name := range m {
		if strings.Contains(name, "FOO1") {
			t.Errorf("a client's method is a label value: %s", name)
		}
		other = other || strings.HasPrefix(name, "inboxd_http_request_duration_seconds_count{") && strings.Contains(name, `method="other"`)
	}
	if !other {
		t.Error(`no request counted with method="other"`)
	}
	// Every queue status is shown, at 0 when empty.
	for name, want := range map[string]float64{
		`inboxd_webhook_deliveries{status="pending"}`: 0, `inboxd_webhook_deliveries{status="failed"}`: 0,
		`inboxd_outbound_deliveries{status="queued"}`: 0, `inboxd_outbound_deliveries{status="bounced"}`: 0,
	} {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if m[`inboxd_database_size_bytes`] <= 0 {
		t.Error("no database size")
	}
	build := false
	for name := range m {
		if strings.HasPrefix(name, "inboxd_build_info{") {
			build = true
		}
		if strings.ContainsAny(name, "@") || strings.Contains(name, "ibx_") || strings.Contains(name, "key_") || strings.Contains(name, "msg_") {
			t.Errorf("a label names an address or id: %s", name)
		}
	}
	if !build {
		t.Error("no inboxd_build_info")
	}

	// The example alerting rules name only metrics that exist.
	rules, err := os.ReadFile(filepath.Join("docs", "prometheus.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`inboxd_[a-z_]+`).FindAllString(string(rules), -1) {
		found := false
		for have := range m {
			found = found || have == name || strings.HasPrefix(have, name+"{") || strings.HasPrefix(have, name+"_")
		}
		if !found {
			t.Errorf("docs/prometheus.rules.yml names %s, which /metrics does not serve", name)
		}
	}
}
