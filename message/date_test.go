package message

import (
	"net/mail"
	"testing"
	"time"
)

// FuzzDateFastPath holds parseDate's first layout to mail.ParseDate: any
// Date it parses, mail.ParseDate parses to the same time and zone, so the
// shortcut changes no stored date.
func FuzzDateFastPath(f *testing.F) {
	for _, s := range []string{
		"Wed, 02 Dec 2026 07:03:23 +0000",
		"Mon, 2 Feb 2026 10:00:00 +0100",
		"mon, 2 feb 2026 10:00:00 -0930",
		"Tue, 2  Feb   2026 10:00:00 +0000",
		"Wed, 2 Dec -026 07:03:23 +0000",
		"Wed, 2 Dec +026 07:03:23 -0000",
		"Fri, 31 Feb 2026 10:00:00 +0000",
		"Sun, 1 Jan 0000 00:00:00 +2359",
		"Mon, 2 Feb 2026 10:00:00 GMT",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		fast, err := time.Parse(rfc5322Date, v)
		if err != nil {
			return
		}
		slow, err := mail.ParseDate(v)
		if err != nil {
			t.Fatalf("%q: the fast layout parses it, mail.ParseDate does not: %v", v, err)
		}
		fn, fo := fast.Zone()
		sn, so := slow.Zone()
		if !fast.Equal(slow) || fn != sn || fo != so {
			t.Fatalf("%q: fast %v, mail.ParseDate %v", v, fast, slow)
		}
	})
}
