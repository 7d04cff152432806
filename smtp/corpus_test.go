package smtp

import (
	"context"
	"crypto/sha256"
	"os"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/corpus"
	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/thread"
)

// TestCorpusOverSMTP sends every message of the public corpora over real
// SMTP: zero rejected, zero lost, each stored with a body, attachments or
// a parse_error.
func TestCorpusOverSMTP(t *testing.T) {
	dirs := corpus.Require(t)
	e := start(t, Config{Accept: AcceptAny, MaxMessageBytes: 25 << 20}, nil)
	ctx := context.Background()
	c := dial(t, e.addr)
	for name, dir := range dirs {
		files, err := corpus.Messages(name, dir)
		if err != nil {
			t.Fatal(err)
		}
		rcpt := "corpus-" + strings.ReplaceAll(name, "+", "-again") + "@localhost"
		distinct := map[string]bool{}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// The SMTP client sends lines with CRLF and a final line break;
			// identical files are one message (a duplicate delivery),
			// unless they have no Message-ID (SPEC §3).
			wire := normalizeCRLF(raw)
			key := f
			if thread.OwnID(message.Parse(wire).MessageID) != "" {
				sum := sha256.Sum256(wire)
				key = string(sum[:])
			}
			distinct[key] = true
			if err := send(c, "corpus@example.com", []string{rcpt}, string(raw)); err != nil {
				t.Errorf("%s rejected: %v", f, err)
				c.Reset()
			}
		}
		ib, err := e.db.InboxByAddress(ctx, rcpt)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := e.db.InboxMessages(ctx, ib.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != len(distinct) {
			t.Errorf("%s: %d files (%d distinct), %d stored", name, len(files), len(distinct), len(msgs))
		}
		parseErrors := 0
		for _, m := range msgs {
			body, err := e.db.GetBody(ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			atts, err := e.db.Attachments(ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			if m.ParseError != nil {
				parseErrors++
			} else if body.Text == nil && body.HTML == nil && len(atts) == 0 {
				t.Errorf("%s: %s stored with no text, html, attachments or parse_error", name, m.RFCMessageID)
			}
		}
		t.Logf("%s: %d files, %d stored, %d with parse_error", name, len(files), len(msgs), parseErrors)
	}
}

// normalizeCRLF is what an SMTP client does to a file on the wire: every
// line ends in CRLF, including the last.
func normalizeCRLF(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/32+2)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n':
			out = append(out, '\r', '\n')
			i++
		case b[i] == '\n' || b[i] == '\r':
			out = append(out, '\r', '\n')
		default:
			out = append(out, b[i])
		}
	}
	if len(out) > 0 && (len(out) < 2 || string(out[len(out)-2:]) != "\r\n") {
		out = append(out, '\r', '\n')
	}
	return out
}
