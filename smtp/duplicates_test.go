package smtp

import (
	"context"
	"io"
	"testing"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/store"
)

// dataReply runs one transaction and returns the text of the 250 to DATA.
func dataReply(t *testing.T, c *gosmtp.Client, to []string, body string) string {
	t.Helper()
	if err := c.Mail("a@example.com", nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range to {
		if err := c.Rcpt(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, body)
	resp, err := w.CloseWithResponse()
	if err != nil {
		t.Fatalf("DATA: %v", err)
	}
	return resp.StatusText
}

// A retry is answered "Already stored as" only when every target inbox
// already had the message; when some did not, they store it and the
// plain 250 answers. Id-less copies are never duplicates.
func TestDuplicateReplies(t *testing.T) {
	e := start(t, Config{}, nil)
	ctx := context.Background()
	other, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "sales@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, e.addr)
	body := "Message-ID: <dup@example.com>\r\nSubject: twice\r\n\r\nhello\r\n"
	if got := dataReply(t, c, []string{"inbox@localhost"}, body); got != "2.0.0 OK: queued" {
		t.Fatalf("first delivery: %q", got)
	}
	if got := dataReply(t, c, []string{"inbox@localhost", "sales@example.com"}, body); got != "2.0.0 OK: queued" {
		t.Fatalf("retry that is new to sales: %q", got)
	}
	mine, _ := e.db.InboxMessages(ctx, e.boot.Inbox.ID)
	theirs, _ := e.db.InboxMessages(ctx, other.ID)
	if len(mine) != 1 || len(theirs) != 1 {
		t.Fatalf("copies: %d in inbox, %d in sales", len(mine), len(theirs))
	}
	want := "2.0.0 Already stored as " + mine[0].ID + ", " + theirs[0].ID
	if got := dataReply(t, c, []string{"inbox@localhost", "sales@example.com"}, body); got != want {
		t.Fatalf("retry to both: %q, want %q", got, want)
	}
	// An id-less message sent twice is two messages, never a duplicate.
	for range 2 {
		if got := dataReply(t, c, []string{"inbox@localhost"}, "Subject: no id\r\n\r\nsame\r\n"); got != "2.0.0 OK: queued" {
			t.Fatalf("id-less message: %q", got)
		}
	}
	if mine, _ = e.db.InboxMessages(ctx, e.boot.Inbox.ID); len(mine) != 3 {
		t.Fatalf("%d messages in inbox, want 3", len(mine))
	}
}

// A deleted message is no longer there to be a duplicate of: a test sink
// that deletes a fixture and replays it gets it stored again.
func TestRedeliveryAfterDeleteIsStored(t *testing.T) {
	e := start(t, Config{}, nil)
	ctx := context.Background()
	c := dial(t, e.addr)
	body := "Message-ID: <fixture@example.com>\r\nSubject: fixture\r\n\r\nhello\r\n"
	dataReply(t, c, []string{"inbox@localhost"}, body)
	msgs, _ := e.db.InboxMessages(ctx, e.boot.Inbox.ID)
	if err := e.db.DeleteMessage(ctx, e.boot.Inbox.ID, msgs[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := dataReply(t, c, []string{"inbox@localhost"}, body); got != "2.0.0 OK: queued" {
		t.Errorf("redelivery after delete: %q", got)
	}
	if msgs, _ := e.db.InboxMessages(ctx, e.boot.Inbox.ID); len(msgs) != 1 || msgs[0].ThreadMatch != "same_message_id" {
		t.Errorf("visible after redelivery: %+v", msgs)
	}
}
