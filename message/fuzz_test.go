package message

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzOther is parsed after each input of FuzzParse: multipart with text,
// HTML and an attachment, so it writes over every buffer a parse reuses.
var fuzzOther = []byte("Content-Type: multipart/mixed; boundary=o\r\n\r\n--o\r\nContent-Type: multipart/alternative; boundary=p\r\n\r\n" +
	"--p\r\nContent-Type: text/plain\r\n\r\n" + strings.Repeat("other text ", 500) + "\r\n--p\r\nContent-Type: text/html\r\n\r\n<p>" +
	strings.Repeat("other html ", 500) + "</p>\r\n--p--\r\n--o\r\nContent-Type: application/octet-stream\r\n\r\n" + strings.Repeat("z", 3000) + "\r\n--o--\r\n")

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/golden/*.eml")
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte("Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/html\n\n<img src=x onerror=alert(1)><script>x</script>\n--b--\n"))
	f.Add([]byte("Content-Type: text/plain; charset=iso-2022-jp\nContent-Transfer-Encoding: quoted-printable\n\n=1B$B\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := Parse(raw)
		if strings.Contains(p.ParseError, "panicked") {
			t.Fatalf("Parse panicked: %s", p.ParseError)
		}
		checkInvariants(t, "fuzz", p)
		// Sanitizing is idempotent for what we store, so serving it again
		// (the API re-sanitizes) never changes the body.
		if again := Sanitize(p.HTML); again != p.HTML {
			t.Fatalf("Sanitize not idempotent:\n once %q\ntwice %q", p.HTML, again)
		}
		// Parses reuse their buffers: a result must not change under the
		// parse after it, here of a message that fills them differently.
		before := goldenJSON(t, p)
		Parse(fuzzOther)
		if after := goldenJSON(t, p); !bytes.Equal(before, after) {
			t.Fatalf("the result changed under a later parse:\nbefore %s\nafter %s", before, after)
		}
	})
}
