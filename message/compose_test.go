package message

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
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
	var py struct {
		Subject, From, Text, HTML, Irt, Refs string
		Atts                                 []string
		Defects                              int
	}
	out := pythonReads(t, raw, `{"subject": str(m["subject"]), "from": str(m["from"]), "text": m.get_body(("plain",)).get_content(),
  "html": m.get_body(("html",)).get_content(), "atts": [a.get_filename() for a in m.iter_attachments()],
  "irt": str(m["in-reply-to"]), "refs": str(m["references"]), "defects": len(m.defects)}`, &py)
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
	longASCII := strings.Repeat(`Quarterly "report" (final) `, 12) + "v2.pdf" // not a backslash: readers take it for a path
	lookalike := "=?utf-8?q?Hacked?=.txt"
	raw, err := Compose(Draft{
		From: Address{Email: "agent@localhost"}, To: []Address{{Email: "a@example.com"}}, Text: "see attached",
		Attachments: []File{{Filename: "Grüße.txt", ContentType: "text/plain", Data: []byte("hi")}, {Filename: long, ContentType: "application/pdf", Data: []byte("%PDF")},
			{Filename: longASCII, ContentType: "application/pdf", Data: []byte("%PDF")}, {Filename: lookalike, ContentType: "text/plain", Data: []byte("x")}},
		MessageID: "m3@localhost", Date: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC),
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
	want := []string{"Grüße.txt", long, longASCII, lookalike}
	if p.ParseError != "" || p.Text != "see attached" || len(p.Attachments) != len(want) {
		t.Fatalf("go parse: %+v", p)
	}
	for i, name := range want {
		if p.Attachments[i].Filename != name {
			t.Errorf("attachment %d read back as %q, want %q", i, p.Attachments[i].Filename, name)
		}
	}
	var py struct {
		Parts, Names []string
		Defects      int
	}
	out := pythonReads(t, raw, `{"parts": [p.get_content_type() for p in m.iter_parts()], "names": [a.get_filename() for a in m.iter_attachments()], "defects": len(m.defects)}`, &py)
	if strings.Join(py.Parts, ",") != "text/plain,text/plain,application/pdf,application/pdf,text/plain" || !slices.Equal(py.Names, want) || py.Defects != 0 {
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
	var py []int
	if out := pythonReads(t, raw, `[len(m["to"].addresses), len(m.defects) + len(m["to"].defects)]`, &py); len(py) != 2 || py[0] != 0 || py[1] != 0 {
		t.Errorf("python: %s", out)
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
		keywords := "Grüße aus Köln, " + strings.Repeat("会議の議題", 8) + ", =?utf-8?q?x?=, plain"
		raw, err := Compose(Draft{From: Address{Email: "agent@localhost"}, To: []Address{{Email: "a@example.com"}}, Subject: subject, Text: "x",
			Headers:   map[string]string{"X-Long": long, "X-A-Rather-Long-Header-Name-That-Leaves-Little-Room-On-Its-Line": "Grüße", "Keywords": keywords},
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
		var py []any
		out := pythonReads(t, raw, `[str(m["subject"]), str(m["x-long"]), str(m["x-a-rather-long-header-name-that-leaves-little-room-on-its-line"]), len(m.defects), str(m["keywords"])]`, &py)
		if len(py) != 5 || py[0] != subject || py[1] != long || py[2] != "Grüße" || py[3] != float64(0) || py[4] != keywords {
			t.Errorf("%q: python read %s", subject, out)
		}
	}
}

// Address fields with long display names beyond ASCII fold at their
// spaces to 76 characters a line, and every name and address reads back
// exactly, here and in Python.
func TestComposeFoldsAddressLists(t *testing.T) {
	to := []Address{
		{Email: "juergen@example.com", Name: strings.Repeat("Jürgen ", 12) + "Müller"},
		{Email: "doe@example.com", Name: "Doe, John  (Sales)"},
		{Email: "yamada@example.jp", Name: "山田太郎 " + strings.Repeat("営業部", 10)},
		{Email: "plain@example.com"},
	}
	raw, err := Compose(Draft{From: Address{Email: "agent@localhost", Name: strings.Repeat("Agent Ünïcode ", 6)}, To: to, Cc: to[:1], Text: "x",
		MessageID: "m6@localhost", Date: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	for _, line := range bytes.Split(head, []byte("\r\n")) {
		if len(line) > 76 {
			t.Errorf("a line of %d characters: %s", len(line), line)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			t.Errorf("a blank header line:\n%s", head)
		}
	}
	p := Parse(raw)
	if len(p.To) != len(to) || len(p.Cc) != 1 || p.From.Name != strings.TrimSpace(strings.Repeat("Agent Ünïcode ", 6)) {
		t.Fatalf("parsed From %+v To %+v Cc %+v", p.From, p.To, p.Cc)
	}
	for i, a := range to {
		if p.To[i].Email != a.Email || p.To[i].Name != a.Name {
			t.Errorf("to[%d] read back as %+v, want %+v", i, p.To[i], a)
		}
	}
	// Python's newer header parser puts a space between adjacent
	// encoded-words in a display name (RFC 2047 §6.2 says to drop it),
	// whether folded or not; its classic functions read them right.
	var py []any
	out := pythonReads(t, raw, `[[str(email.header.make_header(email.header.decode_header(n))), a] for n, a in email.utils.getaddresses(compat32.get_all("to"))] + [len(compat32.defects)]`, &py)
	if len(py) != len(to)+1 || py[len(to)] != float64(0) {
		t.Fatalf("python read %s", out)
	}
	for i, a := range to {
		if pa := py[i].([]any); pa[0] != a.Name || pa[1] != a.Email {
			t.Errorf("python read to[%d] as %v, want %+v", i, pa, a)
		}
	}
}

// pythonReads has Python's email package read raw and answers the JSON of
// expr, decoded into v, and the JSON text. expr sees m, the message under
// the default policy, and compat32, the same under the classic one.
func pythonReads(t *testing.T, raw []byte, expr string, v any) string {
	t.Helper()
	cmd := exec.Command("python3", "-c", `
import email, email.header, email.policy, email.utils, json, sys
raw = sys.stdin.buffer.read()
m = email.message_from_bytes(raw, policy=email.policy.default)
compat32 = email.message_from_bytes(raw)
print(json.dumps(`+expr+`))
`)
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python email: %v", err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("python printed %s: %v", out, err)
	}
	return string(out)
}
