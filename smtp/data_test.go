package smtp

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// DATA as senders really write it, on the wire: a line ending in CR CR
// LF (a double line-ending conversion) before the end of data or before
// a dot-stuffed line, and a line longer than the command-line limit.
// Each is accepted with 250 and stored as sent, the dot unstuffed; none
// hangs the session or is refused (third_party/go-smtp's patches).
func TestDataLinesAsSent(t *testing.T) {
	e := start(t, Config{MaxMessageBytes: 8 << 20}, nil)
	ctx := context.Background()
	long := strings.Repeat("B", maxLineLength+10)
	for _, c := range []struct{ name, wire, stored string }{
		{"CR CR LF before the end", "Subject: crcr\r\nMessage-ID: <crcr1@a>\r\n\r\nline one\r\r\n.\r\n",
			"Subject: crcr\r\nMessage-ID: <crcr1@a>\r\n\r\nline one\r\r\n"},
		{"CR CR LF before a dot-stuffed line", "Subject: crcr\r\nMessage-ID: <crcr2@a>\r\n\r\nline one\r\r\n..dotline\r\nlast\r\n.\r\n",
			"Subject: crcr\r\nMessage-ID: <crcr2@a>\r\n\r\nline one\r\r\n.dotline\r\nlast\r\n"},
		{"a line over the command limit", "Subject: long\r\nMessage-ID: <long@a>\r\n\r\n" + long + "\r\n.\r\n",
			"Subject: long\r\nMessage-ID: <long@a>\r\n\r\n" + long + "\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, _ := e.db.InboxMessages(ctx, e.boot.Inbox.ID)
			w := dialWire(t, e.addr)
			w.cmd("EHLO client.test", "250 ")
			w.cmd("MAIL FROM:<a@example.com>", "250 ")
			w.cmd("RCPT TO:<inbox@localhost>", "250 ")
			w.cmd("DATA", "354 ")
			w.send(c.wire)
			w.expect("250 ")
			w.cmd("QUIT", "221 ")
			msgs, err := e.db.InboxMessages(ctx, e.boot.Inbox.ID)
			if err != nil || len(msgs) != len(before)+1 {
				t.Fatalf("%d messages stored, want %d (%v)", len(msgs), len(before)+1, err)
			}
			var raw bytes.Buffer
			if err := e.db.WriteRaw(ctx, &raw, msgs[0].ID); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(raw.String(), "\r\n"+c.stored) {
				t.Errorf("stored raw ends %q, want %q", tail(raw.String()), tail(c.stored))
			}
		})
	}
}

func tail(s string) string { return s[max(0, len(s)-60):] }
