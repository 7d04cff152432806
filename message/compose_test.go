package message

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestComposeParsesEverywhere(t *testing.T) {
	raw, err := Compose(Draft{
		From: Address{Email: "agent@localhost", Name: "Agent Ünïcode"}, To: []Address{{Email: "a@example.com", Name: "A, B"}},
		Subject: "Grüße — " + strings.Repeat("long subject ", 20), Text: "Hallo,\r\n" + strings.Repeat("x", 2000) + "\r\n", HTML: "<p>Hallo</p>",
		Attachments: []File{{Filename: "Angebot für Ann.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4")}},
		Headers:     map[string]string{"X-Campaign": "q4"}, MessageID: "m1@localhost", InReplyTo: "p@x", References: []string{"r@x", "p@x"},
		Date: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(raw, []byte("\r\n")) {
		if len(line) > 998 || bytes.ContainsRune(line, '\n') {
			t.Fatalf("line %d is %d bytes or has a bare LF", i, len(line))
		}
	}
	p := Parse(raw)
	if p.ParseError != "" || p.Subject != "Grüße — "+strings.TrimSpace(strings.Repeat("long subject ", 20)) && !strings.HasPrefix(p.Subject, "Grüße") ||
		!strings.HasPrefix(p.Text, "Hallo,") || !strings.Contains(p.HTML, "Hallo") || len(p.Attachments) != 1 ||
		p.Attachments[0].Filename != "Angebot für Ann.pdf" || p.From.Name != "Agent Ünïcode" {
		t.Fatalf("go parse: %+v", p)
	}
	script := `
import email, email.policy, json, sys
m = email.message_from_bytes(sys.stdin.buffer.read(), policy=email.policy.default)
atts = [a.get_filename() for a in m.iter_attachments()]
print(json.dumps({"subject": str(m["subject"]), "from": str(m["from"]), "text": m.get_body(("plain",)).get_content(),
  "html": m.get_body(("html",)).get_content(), "atts": atts, "irt": str(m["in-reply-to"]), "refs": str(m["references"]),
  "defects": len(m.defects)}))
`
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python email: %v", err)
	}
	var py struct {
		Subject, From, Text, HTML, Irt, Refs string
		Atts                                 []string
		Defects                              int
	}
	json.Unmarshal(out, &py)
	if !strings.HasPrefix(py.Subject, "Grüße — long subject") || py.From != `Agent Ünïcode <agent@localhost>` ||
		!strings.HasPrefix(py.Text, "Hallo,") || len(py.Atts) != 1 || py.Atts[0] != "Angebot für Ann.pdf" ||
		py.Irt != "<p@x>" || py.Refs != "<r@x> <p@x>" || py.Defects != 0 {
		t.Fatalf("python parse: %s", out)
	}
}

// An attachment's type keeps the parameters it was given (a type with
// parameters once came out as an empty Content-Type header).
func TestComposeKeepsAttachmentTypeParameters(t *testing.T) {
	raw, err := Compose(Draft{
		From: Address{Email: "agent@localhost"}, To: []Address{{Email: "a@example.com"}}, Text: "see attached",
		Attachments: []File{{Filename: "notes.txt", ContentType: "text/plain; charset=utf-8", Data: []byte("hi")}},
		MessageID:   "m2@localhost", Date: time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	p := Parse(raw)
	if len(p.Attachments) != 1 || p.Attachments[0].ContentType != "text/plain" {
		t.Fatalf("attachments: %+v\n%s", p.Attachments, raw)
	}
	if !bytes.Contains(raw, []byte("Content-Type: text/plain; charset=utf-8")) {
		t.Errorf("the attachment's parameters are gone:\n%s", raw)
	}
}

func TestValidAddress(t *testing.T) {
	for s, want := range map[string]bool{
		"a@example.com": true, "ü@例え.jp": true, "a+tag@x": true,
		"": false, "a": false, "@x": false, "a@": false, "a@b@c": false, "a b@x": false, "<a@x>": false,
		"a@.x": false, "a@x.": false, "a@x..y": false, "a\r\n@x": false,
	} {
		if got := ValidAddress(s); got != want {
			t.Errorf("ValidAddress(%q) = %v, want %v", s, got, want)
		}
	}
}
