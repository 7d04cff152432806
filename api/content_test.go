package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/httprate"
)

var update = flag.Bool("update", false, "rewrite golden files")

var idPattern = regexp.MustCompile(`\b(prj|ibx|thd|msg|att|key)_[0-9A-Z]{26}\b`)

// golden compares a response body with testdata/golden/name.json, ids
// replaced by placeholders (they are random) and JSON indented.
func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, body)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(v)
	got := idPattern.ReplaceAll(buf.Bytes(), []byte("${1}_ID"))
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./api -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n%s", name, path, got)
	}
}

const htmlMail = "--x\r\nContent-Type: multipart/alternative; boundary=y\r\n\r\n" +
	"--y\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello Ann,\r\n\r\nthe quote is attached.\r\n\r\nOn Mon, 30 Nov 2026 at 09:00, Ann <ann@example.com> wrote:\r\n> Can you send a quote?\r\n\r\n-- \r\nBob\r\n" +
	"--y\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p onclick=\"x()\">Hello <b>Ann</b>,</p><script>alert(1)</script><img src=\"cid:logo@x\"><img src=\"https://tracker.example/p.gif\">\r\n" +
	"--y--\r\n" +
	"--x\r\nContent-Type: image/png\r\nContent-ID: <logo@x>\r\nContent-Disposition: inline\r\n\r\nPNGDATA\r\n" +
	"--x\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename*=UTF-8''Angebot%20f%C3%BCr%20Ann.pdf\r\n\r\n%PDF-1.4 quote\r\n" +
	"--x\r\nContent-Type: application/x-msdownload\r\nContent-Disposition: attachment; filename=\"invoice.pdf.exe\"\r\n\r\nMZ\r\n--x--\r\n"

func TestMessageContentAndGoldens(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, rawMail("quote@example.com", "=?UTF-8?Q?Angebot_f=C3=BCr_Ann?=", htmlMail, multipartHeader,
		"Cc: Carol <carol@example.com>\r\nIn-Reply-To: <ask@example.com>\r\nReferences: <root@example.com>, <ask@example.com>\r\n"))

	golden(t, "thread", e.get(e.admin, e.path("/inboxes/%s/threads/%s", ib, d.ThreadID)).body)
	msg := e.get(e.admin, e.path("/inboxes/%s/messages/%s", ib, d.MessageID))
	golden(t, "message", msg.body)
	golden(t, "thread_messages", e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages", ib, d.ThreadID)).body)
	body := e.get(e.admin, e.path("/inboxes/%s/messages/%s/body", ib, d.MessageID))
	golden(t, "body", body.body)
	golden(t, "inbox", e.get(e.admin, e.path("/inboxes/%s", ib)).body)

	var b struct{ HTML string }
	json.Unmarshal(body.body, &b)
	if strings.Contains(b.HTML, "script") || strings.Contains(b.HTML, "onclick") || strings.Contains(b.HTML, "tracker.example") ||
		!strings.Contains(b.HTML, "/messages/"+d.MessageID+"/attachments/att_") {
		t.Errorf("served html: %s", b.HTML)
	}

	var m struct {
		Attachments []struct {
			ID           string
			ScanStatus   string `json:"scan_status"`
			Downloadable bool
			Filename     *string
		}
	}
	json.Unmarshal(msg.body, &m)
	var pdf, exe string
	for _, a := range m.Attachments {
		switch {
		case a.Filename != nil && *a.Filename == "Angebot für Ann.pdf":
			pdf = a.ID
		case a.Filename != nil && *a.Filename == "invoice.pdf.exe":
			exe = a.ID
		}
	}
	if pdf == "" || exe == "" {
		t.Fatalf("attachments: %s", msg.body)
	}
	r := e.get(e.admin, e.path("/inboxes/%s/messages/%s/attachments/%s", ib, d.MessageID, pdf))
	if r.status != 200 || string(r.body) != "%PDF-1.4 quote" || r.header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment; filename*=utf-8''Angebot%20f%C3%BCr%20Ann.pdf") ||
		r.header.Get("Content-Type") != "application/pdf" {
		t.Errorf("pdf download: %d %v %q", r.status, r.header, r.body)
	}
	r = e.get(e.admin, e.path("/inboxes/%s/messages/%s/attachments/%s", ib, d.MessageID, exe))
	if r.status != 403 || r.json(t)["error"].(map[string]any)["code"] != "permission_denied" {
		t.Errorf("suspicious download: %d %s", r.status, r.body)
	}

	raw := e.get(e.admin, e.path("/inboxes/%s/messages/%s/raw", ib, d.MessageID))
	if raw.status != 200 || raw.header.Get("Content-Type") != "message/rfc822" || !strings.HasPrefix(string(raw.body), "Received: from test\r\n") ||
		!strings.Contains(string(raw.body), "%PDF-1.4 quote") {
		t.Errorf("raw: %d %v", raw.status, raw.header)
	}
	// messages:read alone cannot fetch raw.
	if r := e.get(e.key([]string{"messages:read"}, nil), e.path("/inboxes/%s/messages/%s/raw", ib, d.MessageID)); r.status != 403 {
		t.Errorf("raw without messages:raw: %d", r.status)
	}

	// Soft delete: gone from lists; body and raw are not found.
	if r := e.do(e.admin, "DELETE", e.path("/inboxes/%s/messages/%s", ib, d.MessageID), ""); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/messages/" + d.MessageID, "/messages/" + d.MessageID + "/body", "/messages/" + d.MessageID + "/raw"} {
		if r := e.get(e.admin, e.path("/inboxes/%s%s", ib, p)); r.status != 404 {
			t.Errorf("after delete %s: %d", p, r.status)
		}
	}
	if ids, _, _ := page(t, e, e.admin, e.path("/inboxes/%s/messages", ib)); len(ids) != 0 {
		t.Errorf("deleted message still listed: %v", ids)
	}
	if ids, _, _ := page(t, e, e.admin, e.path("/inboxes/%s/messages?q=quote", ib)); len(ids) != 0 {
		t.Errorf("deleted message still searchable: %v", ids)
	}
}

func TestErrorGoldens(t *testing.T) {
	e := newEnv(t, Config{Limiter: httprate.NewRateLimiter(1, time.Minute)})
	reader := e.key([]string{"inboxes:read"}, nil)
	golden(t, "error_unauthenticated", e.get("", e.path("/inboxes")).body)
	golden(t, "error_not_found", e.get(e.admin, e.path("/inboxes/ibx_nope")).body)
	golden(t, "error_permission_denied", e.get(reader, e.path("/inboxes/%s/threads", e.boot.Inbox.ID)).body)
	golden(t, "error_invalid_request", e.get(reader, e.path("/inboxes?limit=0")).body)
	golden(t, "error_rate_limited", e.get(reader, e.path("/inboxes")).body)
	e2 := newEnv(t, Config{})
	golden(t, "error_invalid_cursor", e2.get(e2.admin, e2.path("/inboxes/%s/threads?cursor=x", e2.boot.Inbox.ID)).body)
	golden(t, "error_conflict", e2.do(e2.admin, "POST", e2.path("/inboxes"), `{"address":"inbox@localhost"}`).body)
	golden(t, "error_invalid_request_field", e2.do(e2.admin, "POST", e2.path("/inboxes"), `{"address":"a@b.c","x":1}`).body)
}
