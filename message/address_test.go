package message

import "testing"

func TestSplitTag(t *testing.T) {
	for _, c := range []struct{ in, base, tag string }{
		{"inbox@localhost", "inbox@localhost", ""},
		{"Inbox+Build42@LocalHost", "inbox@localhost", "Build42"},
		{" a+b+c@x.example ", "a@x.example", "b+c"},
		{"+only@x.example", "+only@x.example", ""}, // no user before the +
		{"a+@x.example", "a@x.example", ""},
		{"no-at-sign", "no-at-sign", ""},
		{"we+ird@host@x.example", "we@x.example", "ird@host"}, // the last @ splits the domain off
	} {
		if base, tag := SplitTag(c.in); base != c.base || tag != c.tag {
			t.Errorf("SplitTag(%q) = %q, %q; want %q, %q", c.in, base, tag, c.base, c.tag)
		}
	}
}
