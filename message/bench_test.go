package message

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// buildMessage makes a multipart/mixed message with a text/html alternative
// and, when attachment > 0, a base64 attachment of that many random bytes.
func buildMessage(tb testing.TB, textSize, attachment int) []byte {
	tb.Helper()
	var b bytes.Buffer
	b.WriteString("From: Alice Example <alice@example.com>\r\nTo: Bob <bob@example.com>, carol@example.com\r\n" +
		"Subject: =?utf-8?q?Quarterly_report_=E2=80=93_draft?=\r\nDate: Mon, 2 Feb 2026 10:00:00 +0000\r\n" +
		"Message-ID: <bench@example.com>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"mixed\"\r\n\r\n" +
		"--mixed\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n")
	rng := mrand.New(mrand.NewPCG(1, 2))
	words := strings.Fields("the quick brown fox jumps over lazy dog report numbers quarter revenue growth")
	var text strings.Builder
	for text.Len() < textSize {
		text.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(12) == 0 {
			text.WriteString(".\r\n")
		} else {
			text.WriteByte(' ')
		}
	}
	b.WriteString("--alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + text.String() + "\r\n\r\nOn Sun, Feb 1, 2026 Bob <bob@example.com> wrote:\r\n> earlier\r\n")
	b.WriteString("--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body><p>" + text.String() + "</p></body></html>\r\n--alt--\r\n")
	if attachment > 0 {
		data := make([]byte, attachment)
		rand.Read(data)
		b.WriteString("--mixed\r\nContent-Type: application/pdf; name=\"report.pdf\"\r\nContent-Disposition: attachment; filename=\"report.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\n")
		enc := base64.StdEncoding.EncodeToString(data)
		for len(enc) > 76 {
			b.WriteString(enc[:76] + "\r\n")
			enc = enc[76:]
		}
		b.WriteString(enc + "\r\n")
	}
	b.WriteString("--mixed--\r\n")
	return b.Bytes()
}

func BenchmarkParse(b *testing.B) {
	for _, tc := range []struct {
		name             string
		text, attachment int
	}{
		{"4KB-alternative", 1700, 0},
		{"64KB-attachment", 1700, 44 << 10},
	} {
		raw := buildMessage(b, tc.text, tc.attachment)
		b.Run(fmt.Sprintf("%s-%dB", tc.name, len(raw)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				Parse(raw)
			}
		})
	}
}

// TestParseLargeMessageMemory: a 25 MB message with a 20 MB base64
// attachment must parse in about 3x its size (SPEC: 25 MiB default limit).
func TestParseLargeMessageMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~25 MB")
	}
	if raceEnabled {
		t.Skip("allocation counts under the race detector say nothing about a normal build")
	}
	raw := buildMessage(t, 2<<20, 15<<20) // 2 MB text as plain and HTML + 20 MB base64
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := Parse(raw)
	runtime.ReadMemStats(&after)
	if p.ParseError != "" || len(p.Attachments) != 1 || len(p.Attachments[0].Data) != 15<<20 {
		t.Fatalf("parse_error %q, %d attachments", p.ParseError, len(p.Attachments))
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("message %d bytes, allocated %d bytes during Parse (%.2fx)", len(raw), allocated, float64(allocated)/float64(len(raw)))
	if limit := 3 * uint64(len(raw)); allocated > limit {
		t.Errorf("Parse allocated %d bytes for a %d-byte message; want at most %d", allocated, len(raw), limit)
	}
}
