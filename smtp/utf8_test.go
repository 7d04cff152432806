package smtp

import "testing"

// What needs SMTPUTF8: only an envelope local part beyond ASCII; a domain
// beyond ASCII behind an ASCII local part goes as its A-label. Headers
// beyond ASCII are found up to the first empty line, however the lines
// end.
func TestEnvelopeAndHeaders(t *testing.T) {
	for in, want := range map[string]string{
		"anna@münchen.test":   "anna@xn--mnchen-3ya.test",
		"jürgen@münchen.test": "jürgen@münchen.test",
		"a@mail_host.test":    "a@mail_host.test",
		"plain@example.com":   "plain@example.com",
		"no-at-sign":          "no-at-sign",
	} {
		if got := envelopeAddr(in); got != want {
			t.Errorf("envelopeAddr(%q) = %q, want %q", in, got, want)
		}
	}
	for raw, want := range map[string]bool{
		"Subject: hi\r\n\r\nGrüße\r\n":      false,
		"Subject: hi\n\nGrüße\n":            false,
		"Subject: hi\r\n\nGrüße\n":          false,
		"Subject: Grüße\r\n\r\nhi\r\n":      true,
		"To: <a@münchen.test>\n\nhi\n":      true,
		"Subject: no blank line, Grüße\r\n": true,
		"Subject: no blank line, plain\r\n": false,
	} {
		if got := header8bit([]byte(raw)); got != want {
			t.Errorf("header8bit(%q) = %v, want %v", raw, got, want)
		}
	}
}
