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

// Text and attachments are a multipart/mixed of the text part and the
// files, with no multipart/alternative of one; a name beyond ASCII is in
// RFC 2231's form, split into pieces that fold, and reads back whole in
// our parser and in Python's.
func TestComposeOneBodyWithAttachments(t *testing.T) {
	long := strings.Repeat("Übersicht der Änderungen für das Jahr ", 4) + "2026.pdf"
	raw, err := Compose(Draft{
		From: Address{Email: "agent@localhost"}, To: []Address{{Email: "a@example.com"}}, Text: "see attached",
		Attachments: []File{{Filename: "Grüße.txt", ContentType: "text/plain", Data: []byte("hi")}, {Filename: long, ContentType: "application/pdf", Data: []byte("%PDF")}},
		MessageID:   "m3@localhost", Date: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("multipart/alternative")) || bytes.Contains(raw, []byte("=?utf-8?")) {
		t.Errorf("an alternative of one part, or an encoded-word in a filename:\n%s", raw)
	}
	if !bytes.Contains(raw, []byte("filename*=utf-8''Gr%C3%BC%C3%9Fe.txt")) || !bytes.Contains(raw, []byte("filename*1*=")) {
		t.Errorf("filenames not in RFC 2231 form:\n%s", raw)
	}
	for i, line := range bytes.Split(raw, []byte("\r\n")) {
		if len(line) > 76 {
			t.Errorf("line %d is %d characters: %s", i, len(line), line)
		}
	}
	p := Parse(raw)
	if p.ParseError != "" || p.Text != "see attached" || len(p.Attachments) != 2 || p.Attachments[0].Filename != "Grüße.txt" || p.Attachments[1].Filename != long {
		t.Fatalf("go parse: %+v", p)
	}
	cmd := exec.Command("python3", "-c", `
import email, email.policy, json, sys
m = email.message_from_bytes(sys.stdin.buffer.read(), policy=email.policy.default)
print(json.dumps({"parts": [p.get_content_type() for p in m.iter_parts()], "names": [a.get_filename() for a in m.iter_attachments()], "defects": len(m.defects)}))
`)
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python email: %v", err)
	}
	var py struct {
		Parts, Names []string
		Defects      int
	}
	json.Unmarshal(out, &py)
	if strings.Join(py.Parts, ",") != "text/plain,text/plain,application/pdf" || len(py.Names) != 2 || py.Names[0] != "Grüße.txt" || py.Names[1] != long || py.Defects != 0 {
		t.Fatalf("python parse: %s", out)
	}
}

// A message for Bcc recipients only says so in To with an empty group;
// it reads back with no To addresses, and Python finds no defect.
func TestComposeBccOnlyHasUndisclosedTo(t *testing.T) {
	raw, err := Compose(Draft{From: Address{Email: "agent@localhost"}, Text: "x", MessageID: "m4@localhost", Date: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("\r\nTo: undisclosed-recipients:;\r\n")) {
		t.Fatalf("no To:\n%s", raw)
	}
	if p := Parse(raw); p.ParseError != "" || len(p.To) != 0 {
		t.Errorf("parsed To %+v, error %q", p.To, p.ParseError)
	}
	cmd := exec.Command("python3", "-c", `
import email, email.policy, sys
m = email.message_from_bytes(sys.stdin.buffer.read(), policy=email.policy.default)
print(len(m["to"].addresses), len(m.defects) + len(m["to"].defects))
`)
	cmd.Stdin = bytes.NewReader(raw)
	if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != "0 0" {
		t.Errorf("python: %s %v", out, err)
	}
}

// Encoded-words are folded so that no line holds more than 76 characters
// (RFC 2047 §2), in Q for mostly-ASCII text and B for CJK, and text that
// merely looks like an encoded-word is encoded, so it reads back as
// written instead of decoded.
func TestComposeFoldsEncodedWords(t *testing.T) {
	subjects := []string{
		strings.Repeat("Grüße aus Köln ", 20),
		strings.Repeat("会議の議題について確認します", 8),
		"=?utf-8?q?Hacked?=",
		"Preis: 20 € =?ist das?= ok_so",
		"a run too long to fold " + strings.Repeat("x", 1200) + " done",
	}
	for _, subject := range subjects {
		long := strings.Repeat("wörld ", 30)
		raw, err := Compose(Draft{From: Address{Email: "agent@localhost"}, To: []Address{{Email: "a@example.com"}}, Subject: subject, Text: "x",
			Headers:   map[string]string{"X-Long": long, "X-A-Rather-Long-Header-Name-That-Leaves-Little-Room-On-Its-Line": "Grüße"},
			MessageID: "m5@localhost", Date: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
		for _, line := range bytes.Split(head, []byte("\r\n")) {
			if len(line) > 76 && (bytes.Contains(line, []byte("=?")) || bytes.HasPrefix(line, []byte("Subject:"))) && !bytes.HasPrefix(line, []byte("X-A-Rather")) {
				t.Errorf("%q: a line of %d characters: %s", subject, len(line), line)
			}
		}
		p := Parse(raw)
		if p.Subject != strings.TrimSpace(subject) {
			t.Errorf("subject %q read back as %q", subject, p.Subject)
		}
		cmd := exec.Command("python3", "-c", `
import email, email.policy, json, sys
m = email.message_from_bytes(sys.stdin.buffer.read(), policy=email.policy.default)
print(json.dumps([str(m["subject"]), str(m["x-long"]), str(m["x-a-rather-long-header-name-that-leaves-little-room-on-its-line"]), len(m.defects)]))
`)
		cmd.Stdin = bytes.NewReader(raw)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("python email: %v", err)
		}
		var py []any
		json.Unmarshal(out, &py)
		if len(py) != 4 || py[0] != subject || py[1] != long || py[2] != "Grüße" || py[3] != float64(0) {
			t.Errorf("%q: python read %s", subject, out)
		}
	}
}
