package message

import (
	"os"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/corpus"
)

func TestParseCorpus(t *testing.T) {
	for name, dir := range corpus.Require(t) {
		paths, err := corpus.Messages(name, dir)
		if err != nil {
			t.Fatal(err)
		}
		files, withErr, empty := 0, 0, 0
		for _, path := range paths {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			files++
			p := Parse(raw)
			if strings.Contains(p.ParseError, "panicked") {
				t.Errorf("%s: %s", path, p.ParseError)
			}
			if p.ParseError != "" {
				withErr++
				if testing.Verbose() {
					t.Logf("%s: %s", path, p.ParseError)
				}
			}
			if !p.HasText && !p.HasHTML && len(p.Attachments) == 0 && p.ParseError == "" {
				empty++
				t.Errorf("%s: no text, no html, no attachments and no parse error", path)
			}
			checkInvariants(t, path, p)
		}
		t.Logf("%s (%s): %d files, %d with parse_error, %d empty", name, dir, files, withErr, empty)
		if files == 0 {
			t.Errorf("%s: no files in %s", name, dir)
		}
	}
}
