package message

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
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
		data := a.Data
		if a.Large != nil {
			if a.Data != nil {
				t.Errorf("attachment %q has both Data and Large", a.Filename)
			}
			var err error
			if data, err = io.ReadAll(a.Large.Reader()); err != nil {
				t.Fatal(err)
			}
		}
		if int64(len(data)) != a.Size {
			t.Errorf("attachment %q: Size %d, %d bytes", a.Filename, a.Size, len(data))
		}
		sum := sha256.Sum256(data)
		g.Attachments = append(g.Attachments, goldenAttachment{
			Filename: a.Filename, ContentType: a.ContentType, Disposition: a.Disposition,
			ContentID: a.ContentID, ScanStatus: a.ScanStatus, Bytes: len(data),
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
			// Streaming with every attachment spilled, read a byte at a
			// time, must parse to the same result.
			var spilled []*testBlob
			p := ParseReader(iotest.OneByteReader(bytes.NewReader(raw)), Options{Spill: func() Blob {
				b := &testBlob{limit: 16}
				spilled = append(spilled, b)
				return b
			}})
			if got := goldenJSON(t, p); !bytes.Equal(got, exp) {
				t.Errorf("ParseReader with spilled attachments differs from %s; got:\n%s", want, got)
			}
			if err := p.Close(); err != nil || p.SpillErr != nil {
				t.Errorf("Close = %v, SpillErr = %v", err, p.SpillErr)
			}
			for _, b := range spilled {
				if !b.closed && b.moved {
					t.Errorf("a spilled blob of %d bytes was not closed", b.buf.Len())
				}
			}
		})
	}
}

// testBlob is a Blob that reports its content as moved out of memory once
// it holds more than limit bytes, like a spool file.
type testBlob struct {
	buf           bytes.Buffer
	limit         int
	moved, closed bool
}

func (b *testBlob) Write(p []byte) (int, error) {
	n, err := b.buf.Write(p)
	b.moved = b.moved || b.buf.Len() > b.limit
	return n, err
}

func (b *testBlob) Bytes() ([]byte, bool) {
	if b.moved {
		return nil, false
	}
	return b.buf.Bytes(), true
}

func (b *testBlob) Len() int64        { return int64(b.buf.Len()) }
func (b *testBlob) Reader() io.Reader { return bytes.NewReader(b.buf.Bytes()) }
func (b *testBlob) Close() error      { b.closed = true; return nil }
