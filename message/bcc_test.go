package message

import "testing"

// WithoutBcc drops every line a reader could take as part of a Bcc:
// field, as the parser reads the header, and keeps the rest byte for byte.
func TestWithoutBcc(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"none", "To: a@x\r\nSubject: s\r\n\r\nBcc: in the body\r\n", "To: a@x\r\nSubject: s\r\n\r\nBcc: in the body\r\n"},
		{"one", "To: a@x\r\nBcc: b@x\r\nSubject: s\r\n\r\nbody\r\n", "To: a@x\r\nSubject: s\r\n\r\nbody\r\n"},
		{"folded", "To: a@x\r\nBCC: b@x,\r\n\tc@x\r\nSubject: s\r\n\r\nbody\r\n", "To: a@x\r\nSubject: s\r\n\r\nbody\r\n"},
		{"resent, space before the colon", "Resent-Bcc : b@x\r\nTo: a@x\r\n\r\nbody\r\n", "To: a@x\r\n\r\nbody\r\n"},
		{"continuation without whitespace", "To: a@x\r\nBcc: b@x,\r\nc@x\r\nSubject: s\r\n\r\nbody\r\n", "To: a@x\r\nSubject: s\r\n\r\nbody\r\n"},
		{"whitespace before the first field", " Bcc: b@x\r\nTo: a@x\r\n\r\nbody\r\n", "To: a@x\r\n\r\nbody\r\n"},
		{"a line that is no field after another field stays", "To: a@x,\r\nc@x\r\nBcc: b@x\r\n\r\nbody\r\n", "To: a@x,\r\nc@x\r\n\r\nbody\r\n"},
		{"LF only", "To: a@x\nBcc: b@x,\nc@x\nSubject: s\n\nbody\n", "To: a@x\nSubject: s\n\nbody\n"},
	} {
		if got := string(WithoutBcc([]byte(c.in))); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
