package message

import (
	"regexp"
	"strings"
	"testing"
)

// The first-byte filters in front of the regexps must let through every
// line a regexp matches.
func FuzzReplyFilters(f *testing.F) {
	for _, s := range []string{"From: a", "*VON:* b", "от: c", "ОТ: d", "De: e", "Da: f", "Från: g", "OD: h",
		"-- Original Message --", "____________________", "On Mon, Jane wrote:", "W dniu 1 pisze:", "På x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if line == "" {
			return
		}
		first := line[0]
		check := func(name string, re *regexp.Regexp, pass bool) {
			if re.MatchString(line) && !pass {
				t.Errorf("%s matches %q but its filter drops it", name, line)
			}
		}
		check("attributionStart", attributionStart, strings.IndexByte(attributionFirst, first) >= 0)
		check("originalMessage", originalMessage, first == '-')
		check("outlookSeparator", outlookSeparator, first == '_')
		check("outlookFrom", outlookFrom, mayBeOutlookFrom(line))
	})
}
