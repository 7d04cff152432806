package message

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestParsedOutlivesItsBuffers: parses reuse their read buffers (readBufs),
// so a result that kept a slice of one would change under the parses after
// it. Every golden input is parsed and kept, all of them are parsed again
// (each reusing the buffers of the one before), and only then are the kept
// results compared with a fresh parse of their message.
func TestParsedOutlivesItsBuffers(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.eml")
	if err != nil {
		t.Fatal(err)
	}
	raws := [][]byte{buildMessage(t, 1700, 0), buildMessage(t, 1700, 44<<10), buildMessage(t, 300<<10, 0)}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	kept := make([]*Parsed, len(raws))
	for i, raw := range raws {
		kept[i] = Parse(raw)
	}
	for _, raw := range raws {
		Parse(raw)
		OriginalHTML(bytes.NewReader(raw))
	}
	for i, raw := range raws {
		if got, want := goldenJSON(t, kept[i]), goldenJSON(t, Parse(raw)); !bytes.Equal(got, want) {
			t.Errorf("message %d (of %d): its result changed after later parses\nkept:\n%s\nfresh:\n%s", i, len(raws), got, want)
		}
	}
}
