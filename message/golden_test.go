package message

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the current parser")

// goldenAttachment is Attachment with the bytes replaced by their size and
// hash, so golden files stay small and reviewable.
type goldenAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Disposition string `json:"disposition"`
	ContentID   string `json:"content_id"`
	ScanStatus  string `json:"scan_status"`
	Bytes       int    `json:"bytes"`
	SHA256      string `json:"sha256"`
}

type goldenParsed struct {
	Subject       string             `json:"subject"`
	From          *Address           `json:"from"`
	To            []Address          `json:"to"`
	Cc            []Address          `json:"cc"`
	ReplyTo       []Address          `json:"reply_to"`
	Date          string             `json:"date"`
	MessageID     []string           `json:"message_id"`
	InReplyTo     []string           `json:"in_reply_to"`
	References    []string           `json:"references"`
	HasText       bool               `json:"has_text"`
	HasHTML       bool               `json:"has_html"`
	Text          string             `json:"text"`
	HTML          string             `json:"html"`
	Preview       string             `json:"preview"`
	ExtractedText string             `json:"extracted_text"`
	Attachments   []goldenAttachment `json:"attachments"`
	DSN           *goldenDSN         `json:"dsn,omitempty"` // omitted when nil, as for most messages
	ParseError    string             `json:"parse_error"`
}

type goldenDSN struct {
	OriginalMessageID string            `json:"original_message_id"`
	Recipients        []goldenRecipient `json:"recipients"`
}

type goldenRecipient struct {
	Email      string `json:"email"`
	Action     string `json:"action"`
	Status     string `json:"status"`
	Diagnostic string `json:"diagnostic"`
}

func goldenJSON(t *testing.T, p *Parsed) []byte {
	t.Helper()
	g := goldenParsed{
		Subject: p.Subject, From: p.From, To: p.To, Cc: p.Cc, ReplyTo: p.ReplyTo,
		MessageID: p.MessageID, InReplyTo: p.InReplyTo, References: p.References,
		HasText: p.HasText, HasHTML: p.HasHTML, Text: p.Text, HTML: p.HTML,
		Preview: p.Preview, ExtractedText: p.ExtractedText, ParseError: p.ParseError,
		Attachments: []goldenAttachment{},
	}
	if !p.Date.IsZero() {
		g.Date = p.Date.Format(time.RFC3339)
	}
	if p.DSN != nil {
		g.DSN = &goldenDSN{OriginalMessageID: p.DSN.OriginalMessageID, Recipients: []goldenRecipient{}}
		for _, r := range p.DSN.Recipients {
			g.DSN.Recipients = append(g.DSN.Recipients, goldenRecipient(r))
		}
	}
	for _, a := range p.Attachments {
		sum := sha256.Sum256(a.Data)
		g.Attachments = append(g.Attachments, goldenAttachment{
			Filename: a.Filename, ContentType: a.ContentType, Disposition: a.Disposition,
			ContentID: a.ContentID, ScanStatus: a.ScanStatus, Bytes: len(a.Data),
			SHA256: hex.EncodeToString(sum[:]),
		})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.eml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden inputs in testdata/golden")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".eml")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := goldenJSON(t, Parse(raw))
			want := strings.TrimSuffix(f, ".eml") + ".json"
			if *update {
				if err := os.WriteFile(want, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			exp, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run go test ./message -update)", err)
			}
			if !bytes.Equal(got, exp) {
				t.Errorf("%s differs from golden file; got:\n%s", want, got)
			}
		})
	}
}
