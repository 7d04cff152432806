package store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/flate"

	"github.com/inboxd/inboxd/message"
)

// bodyCases are the shapes of body a pack must keep, and more.
func bodyCases(more map[string]message.Parsed) map[string]message.Parsed {
	cases := map[string]message.Parsed{
		"text and html":          {Text: "Hi\n\nOn Mon, Ann wrote:\n> x\n", HasText: true, HTML: "<p>Hi</p>", HasHTML: true, ExtractedText: "Hi"},
		"extracted not a prefix": {Text: "> quoted\nanswer\n", HasText: true, ExtractedText: "answer"},
		"html only":              {HTML: "<p>only html</p>", HasHTML: true, ExtractedText: "only html"},
		"empty parts count":      {HasText: true, HasHTML: true},
		"no body parts":          {},
		"extracted longer":       {Text: "a", HasText: true, ExtractedText: "a b"},
	}
	maps.Copy(cases, more)
	return cases
}

func TestPackedBodyRoundTrip(t *testing.T) {
	long := strings.Repeat("Quarterly numbers attached, see 東京 notes.\n", 2000)
	for name, m := range bodyCases(map[string]message.Parsed{
		"large": {Text: long, HasText: true, HTML: "<pre>" + long + "</pre>", HasHTML: true, ExtractedText: long[:len(long)-1]},
	}) {
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

// packDeflated packs m as rows were packed before S2: format packDeflate,
// the same header, a deflate stream.
func packDeflated(t *testing.T, m *message.Parsed) []byte {
	t.Helper()
	bp := newBodyPacker()
	s2 := bp.pack(m)
	h, err := parsePacked(s2)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.Write(s2[:len(s2)-len(h.stream)])
	out.Bytes()[0] = packDeflate
	w, err := flate.NewWriter(&out, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, m.Text)
	io.WriteString(w, m.HTML)
	if h.flags&packExtractedPrefix == 0 {
		io.WriteString(w, m.ExtractedText)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// Rows packed with deflate, before S2, read as they were written.
func TestPackedBodyReadsDeflateRows(t *testing.T) {
	long := strings.Repeat("Quarterly numbers attached, see 東京 notes.\n", 2000)
	bp := newBodyPacker()
	for name, m := range bodyCases(map[string]message.Parsed{
		"large": {Text: long, HasText: true, HTML: "<pre>" + long + "</pre>", HasHTML: true, ExtractedText: long[:len(long)-1]},
	}) {
		packed := packDeflated(t, &m)
		for round := range 2 { // the second with a reused reader
			got, err := bp.unpack(packed)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if (got.Text != nil) != m.HasText || (got.HTML != nil) != m.HasHTML ||
				got.Text != nil && *got.Text != m.Text || got.HTML != nil && *got.HTML != m.HTML || got.ExtractedText != m.ExtractedText {
				t.Fatalf("%s, round %d: got %+v, want %+v", name, round, got, m)
			}
		}
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

// readPart reads a part as a client of OpenBody does.
func readPart(t *testing.T, p *BodyPart) (string, error) {
	t.Helper()
	r := p.Open(context.Background())
	defer r.Close()
	b, err := io.ReadAll(r)
	return string(b), err
}

// ingestParsed stores a message whose parsed body is m.
func ingestParsed(t *testing.T, db *DB, inboxID, key string, m *message.Parsed) string {
	t.Helper()
	// Distinct bytes: the same bytes again would be an SMTP retry.
	in := incoming(inboxID, fmt.Sprintf("Subject: x\r\nMessage-ID: <%s@example.com>\r\n\r\nx\r\n", key))
	in.Parsed = m
	d, err := db.Ingest(context.Background(), in)
	if err != nil || len(d) != 1 || d[0].MessageID == "" {
		t.Fatalf("ingest: %+v %v", d, err)
	}
	return d[0].MessageID
}

// randomText is n bytes of base64 of random bytes: it packs to three
// quarters of its size, so a few MB of it is a body read in pieces.
func randomText(n int, seed byte) string {
	raw := make([]byte, n*3/4)
	rand.NewChaCha8([32]byte{seed}).Read(raw)
	return base64.StdEncoding.EncodeToString(raw)
}

// OpenBody reads every part as GetBody unpacks it, small bodies (read
// with the row) and large ones (read in pieces), each part as often and
// in whatever order the caller opens them; rows packed with S2 and rows
// packed with deflate before it alike.
func TestOpenBodyReadsPartsAsGetBody(t *testing.T) {
	db, b := openTest(t)
	large := randomText(3<<20, 1)
	for name, m := range bodyCases(map[string]message.Parsed{
		"large":              {Text: large, HasText: true, HTML: "<pre>" + large[1000:] + "</pre>", HasHTML: true, ExtractedText: large[:len(large)-5]},
		"large not a prefix": {Text: large[:2<<20], HasText: true, HTML: "<p>x</p>", HasHTML: true, ExtractedText: "new " + large[2<<20:]},
	}) {
		for _, deflated := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deflated=%v", name, deflated), func(t *testing.T) {
				openBodyParts(t, db, b.Inbox.ID, name, m, deflated)
			})
		}
	}
}

// openBodyParts stores a message with body m, packed with deflate as
// before S2 when deflated is set, and reads it with GetBody and OpenBody.
func openBodyParts(t *testing.T, db *DB, inboxID, name string, m message.Parsed, deflated bool) {
	t.Helper()
	ctx := context.Background()
	id := ingestParsed(t, db, inboxID, fmt.Sprintf("%s-%v", name, deflated), &m)
	if deflated {
		if _, err := db.w.Exec(`UPDATE contents SET body = ? WHERE message = (SELECT pk FROM messages WHERE id = ?)`, packDeflated(t, &m), id); err != nil {
			t.Fatal(err)
		}
	}
	want, err := db.GetBody(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if (want.Text != nil) != m.HasText || want.Text != nil && *want.Text != m.Text || (want.HTML != nil) != m.HasHTML ||
		want.HTML != nil && *want.HTML != m.HTML || want.ExtractedText != m.ExtractedText {
		t.Fatalf("GetBody differs from the stored body")
	}
	parts, err := db.OpenBody(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if (parts.Text != nil) != m.HasText || (parts.HTML != nil) != m.HasHTML {
		t.Fatalf("presence: text %v html %v, want %v %v", parts.Text != nil, parts.HTML != nil, m.HasText, m.HasHTML)
	}
	for range 2 {
		check := func(what string, p *BodyPart, want string) {
			t.Helper()
			if got, err := readPart(t, p); err != nil || got != want {
				t.Fatalf("%s: %d bytes %v, want %d bytes", what, len(got), err, len(want))
			}
		}
		if parts.HTML != nil {
			check("html", parts.HTML, *want.HTML)
		}
		check("extracted_text", &parts.ExtractedText, want.ExtractedText)
		if parts.Text != nil {
			check("text", parts.Text, *want.Text)
		}
	}
}

// A damaged packed body is an error from Read, never a short text, and so
// is a body deleted while it is read.
func TestOpenBodyFailures(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	for _, size := range []int{10 << 10, 3 << 20} { // read with the row, in pieces
		text := randomText(size, 2)
		id := ingestParsed(t, db, b.Inbox.ID, fmt.Sprint(size), &message.Parsed{Text: text, HasText: true, ExtractedText: text})
		if _, err := db.w.Exec(`UPDATE contents SET body = substr(body, 1, length(body) - 100) WHERE message = (SELECT pk FROM messages WHERE id = ?)`, id); err != nil {
			t.Fatal(err)
		}
		parts, err := db.OpenBody(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := readPart(t, parts.Text); !errors.Is(err, errBadPack) {
			t.Errorf("%d bytes, truncated: read %d bytes, err %v", size, len(got), err)
		}
	}

	text := randomText(3<<20, 3)
	id := ingestParsed(t, db, b.Inbox.ID, "deleted", &message.Parsed{Text: text, HasText: true, ExtractedText: text})
	parts, err := db.OpenBody(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r := parts.Text.Open(ctx)
	defer r.Close()
	if _, err := io.ReadFull(r, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.Exec(`DELETE FROM messages WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, r); !errors.Is(err, ErrNotFound) {
		t.Errorf("body deleted while read: read %d more bytes, err %v", n, err)
	}
	if _, err := db.OpenBody(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted body: %v", err)
	}

}

// OpenBodies opens what OpenBody opens, for several messages in one
// query: small bodies and large ones read in pieces alike; a message
// without a body is not found.
func TestOpenBodies(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	large := randomText(3<<20, 4)
	var ids []string
	for key, m := range map[string]message.Parsed{
		"small": {Text: "hello", HasText: true, HTML: "<p>hello</p>", HasHTML: true, ExtractedText: "hello"},
		"large": {Text: large, HasText: true, ExtractedText: large[:1000]},
	} {
		ids = append(ids, ingestParsed(t, db, b.Inbox.ID, "bodies-"+key, &m))
	}
	all, err := db.OpenBodies(ctx, ids)
	if err != nil || len(all) != 2 {
		t.Fatalf("%d bodies, %v", len(all), err)
	}
	for _, id := range ids {
		one, err := db.OpenBody(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got := all[id]
		if (got.HTML != nil) != (one.HTML != nil) || (got.Text != nil) != (one.Text != nil) {
			t.Fatalf("%s: parts differ", id)
		}
		for what, p := range map[string][2]*BodyPart{"text": {got.Text, one.Text}, "html": {got.HTML, one.HTML}, "extracted": {&got.ExtractedText, &one.ExtractedText}} {
			if p[0] == nil {
				continue
			}
			a, err1 := readPart(t, p[0])
			b, err2 := readPart(t, p[1])
			if a != b || err1 != nil || err2 != nil {
				t.Errorf("%s %s: %d bytes %v, OpenBody %d bytes %v", id, what, len(a), err1, len(b), err2)
			}
		}
	}
	if _, err := db.OpenBodies(ctx, append(ids, "msg_missing")); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing body: %v", err)
	}
	if none, err := db.OpenBodies(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("no ids: %v %v", none, err)
	}
}
