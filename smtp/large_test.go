package smtp

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/spool"
	"github.com/inboxd/inboxd/store"
)

// largeMessage returns a message with a text body and one attachment of
// the given decoded bytes, base64 in 76-character lines.
func largeMessage(id string, att []byte) string {
	enc := base64.StdEncoding.EncodeToString(att)
	var b strings.Builder
	b.WriteString("From: a@example.com\r\nTo: inbox@localhost\r\nSubject: large one\r\nMessage-ID: <" + id + ">\r\n")
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=BB\r\n\r\n")
	b.WriteString("--BB\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n")
	b.WriteString("--BB\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=big.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n--BB--\r\n")
	return b.String()
}

// A message larger than the spool's memory limit is received into a file,
// parsed from there with its attachment spilled, and stored in chunks: what
// the raw and attachment routes read back is byte for byte what was sent,
// in every inbox it went to.
func TestLargeMessageStoredFromSpool(t *testing.T) {
	sp, err := spool.New(t.TempDir(), 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, Config{Spool: sp, MaxMessageBytes: 8 << 20}, nil)
	ctx := context.Background()
	other, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "sales@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	att := make([]byte, 3<<20+12345) // not a multiple of the chunk size
	r := rand.NewChaCha8([32]byte{7})
	r.Read(att)
	body := largeMessage("large@example.com", att)
	if err := send(dial(t, e.addr), "a@example.com", []string{"inbox@localhost", "sales@example.com"}, body); err != nil {
		t.Fatal(err)
	}
	for _, inbox := range []string{e.boot.Inbox.ID, other.ID} {
		msgs, err := e.db.InboxMessages(ctx, inbox)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%d messages, %v", len(msgs), err)
		}
		m := msgs[0]
		if m.Subject != "large one" || m.ParseError != nil {
			t.Errorf("subject %q, parse error %v", m.Subject, m.ParseError)
		}
		var raw bytes.Buffer
		if err := e.db.WriteRaw(ctx, &raw, m.ID); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(raw.String(), "Received: ") || !strings.HasSuffix(raw.String(), "\r\n"+body) {
			t.Fatalf("stored raw of %d bytes is not trace + the %d bytes sent", raw.Len(), len(body))
		}
		if whole, err := e.db.Raw(ctx, m.ID); err != nil || !bytes.Equal(whole, raw.Bytes()) {
			t.Fatalf("Raw differs from WriteRaw (%v)", err)
		}
		b, err := e.db.GetBody(ctx, m.ID)
		if err != nil || b.Text == nil || *b.Text != "see attached" {
			t.Fatalf("body %+v, %v", b, err)
		}
		atts, err := e.db.Attachments(ctx, m.ID)
		if err != nil || len(atts) != 1 || atts[0].Bytes != int64(len(att)) || atts[0].Filename != "big.bin" {
			t.Fatalf("attachments %+v, %v", atts, err)
		}
		var got bytes.Buffer
		if err := e.db.WriteAttachment(ctx, &got, atts[0].ID); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), att) {
			t.Fatalf("attachment read back as %d bytes, differs", got.Len())
		}
	}
	// The same bytes again are a duplicate, as for a message in memory.
	if err := send(dial(t, e.addr), "a@example.com", []string{"inbox@localhost"}, body); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := e.db.InboxMessages(ctx, e.boot.Inbox.ID); len(msgs) != 1 {
		t.Errorf("a retry of the large message was stored again: %d", len(msgs))
	}
}

// When the spool cannot take a message (its directory is gone, as a full
// disk would do), the client is told to retry: 451 with no internal text.
func TestSpoolFailureIs451(t *testing.T) {
	dir := t.TempDir()
	sp, err := spool.New(dir, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, Config{Spool: sp}, nil)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err = send(dial(t, e.addr), "a@example.com", []string{"inbox@localhost"}, largeMessage("x@example.com", make([]byte, 4<<10)))
	code, enh, msg := smtpCode(t, err)
	if code != 451 || enh != [3]int{4, 3, 0} || strings.Contains(msg, dir) || strings.Contains(msg, "spool") {
		t.Errorf("got %d %v %q", code, enh, msg)
	}
	if msgs, _ := e.db.InboxMessages(context.Background(), e.boot.Inbox.ID); len(msgs) != 0 {
		t.Errorf("%d messages stored", len(msgs))
	}
}

// BenchmarkLargeMessage sends one 25 MB message (an 18 MB attachment) per
// iteration through a spooling server with fsync on.
func BenchmarkLargeMessage(b *testing.B) {
	sp, err := spool.New(b.TempDir(), 1<<20)
	if err != nil {
		b.Fatal(err)
	}
	e := start(b, Config{Spool: sp, MaxMessageBytes: 26 << 20}, nil)
	att := make([]byte, 18<<20)
	rand.NewChaCha8([32]byte{9}).Read(att)
	bodies := make([]string, b.N)
	for i := range bodies {
		bodies[i] = largeMessage(fmt.Sprintf("large-%d@example.com", i), att)
	}
	c := dialTB(b, e.addr)
	b.SetBytes(int64(len(bodies[0])))
	b.ResetTimer()
	for i := range b.N {
		if err := send(c, "a@example.com", []string{"inbox@localhost"}, bodies[i]); err != nil {
			b.Fatal(err)
		}
	}
}
