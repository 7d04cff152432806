package smtp

import (
	"strings"
	"testing"
)

// A relay URL that does not parse is named in the error without its
// password: SES and SendGrid passwords often hold a '/', which breaks the
// URL, and the error goes to the log (or systemd's journal).
func TestNewRelayErrorHidesThePassword(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"smtp://AKIAEXAMPLE:BPa7s/ecretK3y+x@email-smtp.example.com:587", `"smtp://AKIAEXAMPLE:…@email-smtp.example.com:587"`},
		{"smtps://apikey:hunter2@host:notaport", `"smtps://apikey:…@host:notaport"`},
		{"smtp://a:b@c@d:x@host:bad", `"smtp://a:…@host:bad"`},
		{"http://user@host", `"http://user@host"`},
		{"user:secret@host:587", `"user:…@host:587"`},
	} {
		_, err := NewRelay(RelayConfig{URL: c.url})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "secret") ||
			strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "ecretK3y") {
			t.Errorf("%s: %v, want %s", c.url, err, c.want)
		}
	}
}
