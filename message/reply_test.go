package message

import "testing"

// The first-byte filters in front of the regexps must let through every
// line a regexp matches.
func FuzzReplyFilters(f *testing.F) {
	for _, s := range []string{"From: a", "*VON:* b", "от: c", "ОТ: d", "De: e", "Da: f", "Från: g", "OD: h",
		"-- Original Message --", "____________________", "On Mon, Jane wrote:", "W dniu 1 pisze:", "På x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for name, r := range map[string]lineRule{"attributionStart": attributionStart, "originalMessage": originalMessage,
			"outlookSeparator": outlookSeparator, "outlookFrom": outlookFrom} {
			if r.re.MatchString(line) && !r.may(line) {
				t.Errorf("%s matches %q but its filter drops it", name, line)
			}
		}
	})
}
