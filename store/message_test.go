package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Clearing an inbox deletes each of its messages as DeleteMessage would,
// and only its own: they leave the feed, the thread list and search, their
// bodies and raw are gone, and the other inbox keeps all of its. A reply
// to a cleared message still joins its thread, which comes back with one
// message.
func TestDeleteInboxMessages(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	var first Delivered
	for i := range 3 {
		for _, ib := range []string{b.Inbox.ID, other.ID} {
			d, err := db.Ingest(ctx, incoming(ib, fmt.Sprintf("Message-ID: <m%d@x>\r\nSubject: s%d\r\n\r\nkeepsake %d\r\n", i, i, i)))
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 && ib == b.Inbox.ID {
				first = d[0]
			}
		}
	}
	if n, err := db.DeleteInboxMessages(ctx, b.Inbox.ID); err != nil || n != 3 {
		t.Fatalf("DeleteInboxMessages = %d, %v; want 3", n, err)
	}
	if n, err := db.DeleteInboxMessages(ctx, b.Inbox.ID); err != nil || n != 0 {
		t.Fatalf("a second clear = %d, %v; want 0", n, err)
	}
	if _, th, err := db.GetInboxThread(ctx, b.ProjectID, b.Inbox.ID, first.ThreadID); err != nil || th.MessageCount != 0 || th.Preview != "" {
		t.Errorf("a cleared thread: %+v %v; want no message and no preview", th, err)
	}
	count := func(inboxID string) (msgs, threads, found int) {
		t.Helper()
		m, err := db.InboxPage(ctx, inboxID, Query{}, "", nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		th, err := db.ListThreads(ctx, inboxID, Query{}, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(m), len(th), searchThreads(t, db, inboxID, "keepsake")
	}
	if m, th, f := count(b.Inbox.ID); m != 0 || th != 0 || f != 0 {
		t.Errorf("cleared inbox: %d messages, %d threads, %d found; want none", m, th, f)
	}
	if m, th, f := count(other.ID); m != 3 || th != 3 || f != 3 {
		t.Errorf("other inbox: %d messages, %d threads, %d found; want 3 each", m, th, f)
	}
	if m, err := db.GetMessage(ctx, b.Inbox.ID, first.MessageID); err != nil || !m.Deleted {
		t.Errorf("a cleared message is not deleted: %+v %v", m, err)
	}
	d, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Message-ID: <r@x>\r\nIn-Reply-To: <m0@x>\r\nSubject: re\r\n\r\nreply\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d[0].ThreadID != first.ThreadID {
		t.Errorf("a reply to a cleared message opened thread %s, want %s", d[0].ThreadID, first.ThreadID)
	}
	th, err := db.ListThreads(ctx, b.Inbox.ID, Query{}, nil, 100)
	if err != nil || len(th) != 1 || th[0].MessageCount != 1 {
		t.Errorf("threads after the reply: %+v %v", th, err)
	}
}

// Deleting a thread's latest message takes its preview, direction and
// time off the thread row: they are the latest message's that is left.
func TestDeleteMessageUpdatesItsThread(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	firstAt := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	in := incoming(b.Inbox.ID, "Message-ID: <d1@x>\r\nSubject: s\r\n\r\nroot text\r\n")
	in.ReceivedAt = firstAt
	first, err := db.Ingest(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	in = incoming(b.Inbox.ID, "Message-ID: <d2@x>\r\nIn-Reply-To: <d1@x>\r\nSubject: Re: s\r\n\r\nsecond text\r\n")
	in.ReceivedAt = firstAt.Add(time.Minute)
	second, err := db.Ingest(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteMessage(ctx, b.Inbox.ID, second[0].MessageID); err != nil {
		t.Fatal(err)
	}
	_, th, err := db.GetInboxThread(ctx, b.ProjectID, b.Inbox.ID, first[0].ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	// last_message_at moves forward only (SPEC §4); the preview is the
	// latest message's that is left.
	if th.MessageCount != 1 || th.Preview != "root text" || !th.LastMessageAt.Equal(firstAt.Add(time.Minute)) || th.LastMessageDirection != "inbound" {
		t.Errorf("thread after its latest message was deleted: %+v", th)
	}
	// With none left, nothing of a deleted message's text stays on it.
	if err := db.DeleteMessage(ctx, b.Inbox.ID, first[0].MessageID); err != nil {
		t.Fatal(err)
	}
	if _, th, err = db.GetInboxThread(ctx, b.ProjectID, b.Inbox.ID, first[0].ThreadID); err != nil || th.MessageCount != 0 || th.Preview != "" {
		t.Errorf("thread with no message left: %+v %v", th, err)
	}
}
