package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/store"
)

// sendMailReply runs one SMTP transaction and returns the text of the
// reply to DATA (after the 250).
func sendMailReply(t *testing.T, addr, from string, to []string, body string) string {
	t.Helper()
	c, err := gosmtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Mail(from, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range to {
		if err := c.Rcpt(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, body); err != nil {
		t.Fatal(err)
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		t.Fatalf("DATA: %v", err)
	}
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
	return resp.StatusText
}

// inboxMessages opens the data dir of a stopped server and lists the
// messages of an inbox.
func inboxMessages(t *testing.T, data, address string) []store.Message {
	t.Helper()
	db := openStore(t, data)
	ctx := context.Background()
	ib, err := db.InboxByAddress(ctx, address)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := db.InboxMessages(ctx, ib.ID)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// metricsText is /metrics beside the API, read with the admin key.
func metricsText(t *testing.T, httpAddr, data string) string {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey(t, data))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README's quick start sends the same id-less message twice: both are
// mail (SPEC §3). A retry of a message with a Message-ID and the same bytes
// is a duplicate delivery (SPEC §4): answered "Already stored as", not
// stored, counted in /metrics.
func TestDuplicatesOverSMTP(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data)
	quick := "Subject: hello\r\n\r\nfirst mail\r\n"
	for range 2 {
		if got := sendMailReply(t, s.smtp, "you@example.com", []string{"inbox@localhost"}, quick); got != "2.0.0 OK: queued" {
			t.Fatalf("id-less send answered %q", got)
		}
	}
	withID := "From: ann@example.com\r\nMessage-ID: <retry-1@example.com>\r\nSubject: retry\r\n\r\nsame bytes\r\n"
	if got := sendMailReply(t, s.smtp, "ann@example.com", []string{"inbox@localhost"}, withID); got != "2.0.0 OK: queued" {
		t.Fatalf("first copy answered %q", got)
	}
	retry := sendMailReply(t, s.smtp, "ann@example.com", []string{"inbox@localhost"}, withID)
	m := metricsText(t, s.http, data)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	msgs := inboxMessages(t, data, "inbox@localhost")
	if len(msgs) != 3 {
		t.Fatalf("%d messages stored, want 3 (two id-less, one with an id)", len(msgs))
	}
	var stored string
	generated := map[string]bool{}
	for _, msg := range msgs {
		if msg.RFCMessageID == "<retry-1@example.com>" {
			stored = msg.ID
		} else if msg.RFCMessageIDGenerated {
			generated[msg.RFCMessageID] = true
		}
	}
	if len(generated) != 2 {
		t.Errorf("id-less messages got generated ids %v, want two distinct", generated)
	}
	if want := "2.0.0 Already stored as " + stored; retry != want {
		t.Errorf("retry answered %q, want %q", retry, want)
	}
	if !strings.Contains(m, "\ninboxd_duplicates_total 1\n") {
		t.Errorf("metrics do not count the duplicate:\n%s", grepLines(m, "inboxd_duplicates"))
	}
}

// --store-duplicates keeps the retry too, as another copy of the id.
func TestStoreDuplicatesFlag(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--store-duplicates")
	withID := "From: ann@example.com\r\nMessage-ID: <retry-2@example.com>\r\nSubject: retry\r\n\r\nsame bytes\r\n"
	for range 2 {
		if got := sendMailReply(t, s.smtp, "ann@example.com", []string{"inbox@localhost"}, withID); got != "2.0.0 OK: queued" {
			t.Fatalf("send answered %q", got)
		}
	}
	m := metricsText(t, s.http, data)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	msgs := inboxMessages(t, data, "inbox@localhost")
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	// The retry joined the first copy's thread.
	matches := map[string]bool{msgs[0].ThreadMatch: true, msgs[1].ThreadMatch: true}
	if !matches["new"] || !matches["same_message_id"] || msgs[0].ThreadID != msgs[1].ThreadID {
		t.Errorf("copies stored as %s/%s and %s/%s", msgs[0].ThreadID, msgs[0].ThreadMatch, msgs[1].ThreadID, msgs[1].ThreadMatch)
	}
	if !strings.Contains(m, "\ninboxd_duplicates_total 0\n") {
		t.Errorf("a stored copy was counted as a duplicate:\n%s", grepLines(m, "inboxd_duplicates"))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
