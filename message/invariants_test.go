package message

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

var dangerousAttr = regexp.MustCompile(`<[^>]*(\son[a-z]+\s*=|(href|src|action)\s*=\s*["']?\s*javascript:)`)

// checkInvariants holds for every Parse result, whatever the input.
func checkInvariants(t *testing.T, name string, p *Parsed) {
	t.Helper()
	if n := utf8.RuneCountInString(p.Preview); n > previewRunes {
		t.Errorf("%s: preview has %d runes", name, n)
	}
	if strings.ContainsAny(p.Preview, "\n\r\t") {
		t.Errorf("%s: preview has line breaks: %q", name, p.Preview)
	}
	if p.Preview != strings.TrimSpace(p.Preview) {
		t.Errorf("%s: preview not trimmed: %q", name, p.Preview)
	}
	for _, s := range []string{p.Subject, p.Text, p.HTML, p.Preview, p.ExtractedText} {
		if !utf8.ValidString(s) {
			t.Errorf("%s: invalid UTF-8 in output %q", name, s)
		}
	}
	lower := strings.ToLower(p.HTML)
	for _, bad := range []string{"<script", "<iframe", "<form", "<style", "src=\"http", "src=\"//"} {
		if strings.Contains(lower, bad) {
			t.Errorf("%s: sanitized HTML contains %q", name, bad)
		}
	}
	// Event handlers and javascript: URLs are only dangerous inside a tag;
	// the same words in text ("0 onerror0") are text.
	if m := dangerousAttr.FindString(lower); m != "" {
		t.Errorf("%s: sanitized HTML has a dangerous attribute: %q", name, m)
	}
	if p.To == nil || p.Cc == nil || p.ReplyTo == nil {
		t.Errorf("%s: nil address list", name)
	}
	for _, a := range p.Attachments {
		if a.Disposition != "inline" && a.Disposition != "attachment" {
			t.Errorf("%s: disposition %q", name, a.Disposition)
		}
		if a.ScanStatus != "clean" && a.ScanStatus != "suspicious" {
			t.Errorf("%s: scan status %q", name, a.ScanStatus)
		}
		if a.ContentType == "" || a.ContentType != strings.ToLower(a.ContentType) {
			t.Errorf("%s: content type %q", name, a.ContentType)
		}
	}
}
