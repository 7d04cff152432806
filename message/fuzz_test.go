package message

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	})
}
