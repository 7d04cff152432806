package store

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/message"
)

func TestPackedBodyRoundTrip(t *testing.T) {
	long := strings.Repeat("Quarterly numbers attached, see 東京 notes.\n", 2000)
	for name, m := range map[string]message.Parsed{
		"text and html":          {Text: "Hi\n\nOn Mon, Ann wrote:\n> x\n", HasText: true, HTML: "<p>Hi</p>", HasHTML: true, ExtractedText: "Hi"},
		"extracted not a prefix": {Text: "> quoted\nanswer\n", HasText: true, ExtractedText: "answer"},
		"html only":              {HTML: "<p>only html</p>", HasHTML: true, ExtractedText: "only html"},
		"empty parts count":      {HasText: true, HasHTML: true},
		"no body parts":          {},
		"large":                  {Text: long, HasText: true, HTML: "<pre>" + long + "</pre>", HasHTML: true, ExtractedText: long[:len(long)-1]},
		"extracted longer":       {Text: "a", HasText: true, ExtractedText: "a b"},
	} {
		t.Run(name, func(t *testing.T) {
			bp := newBodyPacker()
			packed := bp.pack(&m)
			got, err := bp.unpack(packed)
			if err != nil {
				t.Fatal(err)
			}
			if (got.Text != nil) != m.HasText || (got.HTML != nil) != m.HasHTML {
				t.Fatalf("presence: text %v html %v, want %v %v", got.Text != nil, got.HTML != nil, m.HasText, m.HasHTML)
			}
			if got.Text != nil && *got.Text != m.Text || got.HTML != nil && *got.HTML != m.HTML || got.ExtractedText != m.ExtractedText {
				t.Fatalf("got %+v, want %+v", got, m)
			}
			if name == "large" && len(packed) > (len(m.Text)+len(m.HTML))/10 {
				t.Errorf("large body packed to %d bytes of %d", len(packed), len(m.Text)+len(m.HTML)+len(m.ExtractedText))
			}
		})
	}
}

func TestPackedBodyRejectsDamage(t *testing.T) {
	bp := newBodyPacker()
	packed := bp.pack(&message.Parsed{Text: "hello there", HasText: true, ExtractedText: "hello there"})
	for name, b := range map[string][]byte{
		"empty":          nil,
		"unknown format": append([]byte{9}, packed[1:]...),
		"truncated":      packed[:len(packed)-2],
		"length too big": append([]byte{packed[0], packed[1], 99}, packed[3:]...),
		// lengths whose sum overflows to the real total (11): a slice
		// panic, not an error, before lengths were bounded
		"lengths overflow": overflowingLengths(packed),
	} {
		if _, err := bp.unpack(b); !errors.Is(err, errBadPack) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// Bodies stored before migration 0007 (plain columns, packed NULL) still
// read the same.
func TestGetBodyReadsPlainRows(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	d, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Subject: x\r\n\r\nnew text\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	id := d[0].MessageID
	got, err := db.GetBody(ctx, id)
	if err != nil || got.Text == nil || *got.Text != "new text\n" || got.HTML != nil || got.ExtractedText != "new text" {
		t.Fatalf("packed row: %+v %v", got, err)
	}
	if _, err := db.w.Exec(`UPDATE bodies SET text = 'old text', html = NULL, extracted_text = 'old', packed = NULL WHERE message_id = ?`, id); err != nil {
		t.Fatal(err)
	}
	got, err = db.GetBody(ctx, id)
	if err != nil || got.Text == nil || *got.Text != "old text" || got.HTML != nil || got.ExtractedText != "old" {
		t.Fatalf("plain row: %+v %v", got, err)
	}
}

// overflowingLengths rewrites packed's header so that len(text) is 2^64-5
// and len(html) 16: their sum wraps to the 11 bytes the stream holds.
func overflowingLengths(packed []byte) []byte {
	rest := packed[2:]
	for range 3 {
		_, n := binary.Uvarint(rest)
		rest = rest[n:]
	}
	out := []byte{packed[0], packed[1]}
	out = binary.AppendUvarint(out, math.MaxUint64-4)
	out = binary.AppendUvarint(out, 16)
	out = binary.AppendUvarint(out, 0)
	return append(out, rest...)
}
