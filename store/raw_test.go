package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/message"
)

// storedRaw is how contents holds a message's raw bytes.
func storedRaw(t *testing.T, db *DB, messageID string) (format, dataLen, size int) {
	t.Helper()
	err := db.r.QueryRow(`SELECT c.raw_format, length(c.data), m.raw_size FROM messages m JOIN contents c ON c.message = m.pk
		WHERE m.id = ?`, messageID).Scan(&format, &dataLen, &size)
	if err != nil {
		t.Fatal(err)
	}
	return format, dataLen, size
}

// Raw bytes that S2 shrinks are stored compressed, the rest as received,
// and either way a client reads back the trace and the bytes as received;
// so it does from a row stored before migration 0019, plain.
func TestRawStoredCompressedServedAsReceived(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	headers := "From: a@example.com\r\nTo: inbox@localhost\r\nSubject: raw\r\n"
	for name, c := range map[string]struct {
		raw    string
		format int
	}{
		"text":         {benchRaw(headers+"Message-ID: <text@example.com>\r\n", 8000), rawS2},
		"random":       {headers + "Message-ID: <random@example.com>\r\n\r\n" + randomText(20000, 7) + "\r\n", rawPlain},
		"short":        {headers + "Message-ID: <short@example.com>\r\n\r\nhi\r\n", rawPlain},
		"short repeat": {headers + "Message-ID: <repeat@example.com>\r\n\r\n" + strings.Repeat("a", 300) + "\r\n", rawPlain},
	} {
		d, err := db.Ingest(ctx, incoming(b.Inbox.ID, c.raw))
		if err != nil {
			t.Fatal(err)
		}
		id := d[0].MessageID
		format, dataLen, size := storedRaw(t, db, id)
		if format != c.format || size != len(c.raw) || format == rawS2 && dataLen > size/3 || format == rawPlain && dataLen != size {
			t.Errorf("%s: stored in format %d, %d bytes for %d received; want format %d", name, format, dataLen, size, c.format)
		}
		want := "Received: test\r\n" + c.raw
		if got, err := db.Raw(ctx, id); err != nil || string(got) != want {
			t.Errorf("%s: raw read back %d bytes %v, want %d", name, len(got), err, len(want))
		}
		if format != rawS2 {
			continue
		}
		if _, err := db.w.Exec(`UPDATE contents SET data = ?, raw_format = 0 WHERE message = (SELECT pk FROM messages WHERE id = ?)`, []byte(c.raw), id); err != nil {
			t.Fatal(err)
		}
		if got, err := db.Raw(ctx, id); err != nil || string(got) != want {
			t.Errorf("%s, stored plain: raw read back %d bytes %v, want %d", name, len(got), err, len(want))
		}
	}
}

// A damaged compressed row is an error before any byte is written, never
// other bytes: cut short, zeroed, any single bit flipped (the checksum),
// or of an unknown format.
func TestRawDamagedIsAnError(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	raw := benchRaw("Subject: damaged\r\nMessage-ID: <damaged@example.com>\r\n", 4000)
	d, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw))
	if err != nil {
		t.Fatal(err)
	}
	id := d[0].MessageID
	if format, _, _ := storedRaw(t, db, id); format != rawS2 {
		t.Fatalf("stored in format %d, want %d", format, rawS2)
	}
	var stored []byte
	if err := db.r.QueryRow(`SELECT data FROM contents WHERE message = (SELECT pk FROM messages WHERE id = ?)`, id).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	damages := map[string]func([]byte) ([]byte, int){
		"cut short": func(b []byte) ([]byte, int) { return b[:len(b)-10], rawS2 },
		"zeroed":    func(b []byte) ([]byte, int) { clear(b[20:]); return b, rawS2 },
		"empty":     func([]byte) ([]byte, int) { return []byte{}, rawS2 },
		"format 7":  func(b []byte) ([]byte, int) { return b, 7 },
	}
	for i := range stored {
		damages[fmt.Sprintf("bit flipped at %d", i)] = func(b []byte) ([]byte, int) { b[i] ^= 1 << (i % 8); return b, rawS2 }
	}
	for name, damage := range damages {
		data, format := damage(append([]byte{}, stored...))
		if _, err := db.w.Exec(`UPDATE contents SET data = ?, raw_format = ? WHERE message = (SELECT pk FROM messages WHERE id = ?)`, data, format, id); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := db.WriteRaw(ctx, &out, id); !errors.Is(err, errBadRaw) || out.Len() != 0 {
			t.Errorf("%s: wrote %d bytes, err %v", name, out.Len(), err)
		}
	}
}

// A message held in memory past maxPackedRaw (a large API send) is
// stored plain, to be streamed in pieces.
func TestRawLargeStoredPlain(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	raw := benchRaw("Subject: large\r\nMessage-ID: <large@example.com>\r\n", maxPackedRaw)
	d, err := db.Ingest(ctx, incoming(b.Inbox.ID, raw))
	if err != nil {
		t.Fatal(err)
	}
	if format, dataLen, size := storedRaw(t, db, d[0].MessageID); format != rawPlain || dataLen != size || size != len(raw) {
		t.Errorf("stored in format %d, %d bytes for %d received; want plain", format, dataLen, size)
	}
	if got, err := db.Raw(ctx, d[0].MessageID); err != nil || string(got) != "Received: test\r\n"+raw {
		t.Errorf("raw read back %d bytes %v, want %d", len(got), err, len(raw)+16)
	}
}

// A sent message stored compressed reaches a local inbox as it was sent.
func TestLocalDeliveryOfCompressedRaw(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	if _, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "bob@localhost"}); err != nil {
		t.Fatal(err)
	}
	raw := benchRaw("From: inbox@localhost\r\nTo: bob@localhost\r\nMessage-ID: <big@localhost>\r\nSubject: big\r\n", 8000)
	sent, err := db.Send(ctx, SendRequest{Out: Outgoing{InboxID: b.Inbox.ID, Raw: []byte(raw), Confirmed: true,
		Recipients: []Recipient{{Email: "bob@localhost", Type: "to", Route: "local"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if format, _, _ := storedRaw(t, db, sent.MessageID); format != rawS2 {
		t.Fatalf("sent message stored in format %d, want %d", format, rawS2)
	}
	if n, err := db.DeliverLocalDue(ctx, 100); err != nil || n != 1 {
		t.Fatalf("delivered %d, want 1 (%v)", n, err)
	}
	var copyID string
	if err := db.r.QueryRow(`SELECT id FROM messages WHERE direction = 'inbound'`).Scan(&copyID); err != nil {
		t.Fatal(err)
	}
	got, err := db.Raw(ctx, copyID)
	if err != nil || !strings.HasPrefix(string(got), "Received: ") || !strings.HasSuffix(string(got), "\r\n"+raw) {
		t.Fatalf("delivered copy: %d bytes %v, want the %d sent after a Received line", len(got), err, len(raw))
	}
}

// Stored bytes of any shape unpack to the bytes packed or to an error,
// never a panic or other bytes; whatever is packed unpacks to itself.
func FuzzUnpackStored(f *testing.F) {
	bp := newBodyPacker()
	for _, s := range []string{"", "hello", benchRaw("Subject: fuzz\r\n", 600)} {
		f.Add([]byte(s), packRaw([]byte(s)).data)
		f.Add([]byte(s), bp.pack(&message.Parsed{Text: s, HasText: true, HTML: "<p>" + s, HasHTML: true, ExtractedText: s}))
	}
	f.Fuzz(func(t *testing.T, raw, stored []byte) {
		z := packRaw(raw)
		if got, err := z.unpack(int64(len(raw))); err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("round trip of %d bytes in format %d: %d bytes, %v", len(raw), z.format, len(got), err)
		}
		for _, size := range []int64{0, int64(len(raw)), 1 << 20} {
			if got, err := (packedRaw{stored, rawS2}).unpack(size); err == nil && int64(len(got)) != size {
				t.Fatalf("unpacked %d bytes of a stated %d", len(got), size)
			}
		}
		if b, err := bp.unpack(stored); err == nil && b.Text != nil && !strings.HasPrefix(*b.Text, b.ExtractedText) &&
			stored[1]&packExtractedPrefix != 0 {
			t.Fatalf("extracted text not the prefix its flag says")
		}
	})
}
