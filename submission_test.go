package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/store"
)

// submit sends body with AUTH PLAIN token to rcpts.
func submit(addr, token string, rcpts []string, body string) error {
	c, err := gosmtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Auth(sasl.NewPlainClient("", "app", token)); err != nil {
		return err
	}
	return c.SendMail("inbox@localhost", rcpts, strings.NewReader(body))
}

// headerNames returns the lower-cased field names of raw's header section.
func headerNames(raw []byte) []string {
	head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
	var names []string
	for _, line := range bytes.Split(head, []byte("\r\n")) {
		if name, _, ok := bytes.Cut(line, []byte(":")); ok && len(line) > 0 && line[0] != ' ' && line[0] != '\t' {
			names = append(names, strings.ToLower(strings.TrimSpace(string(name))))
		}
	}
	return names
}

// waitState waits, woken by commits, until the message reaches state.
func waitState(t *testing.T, db *store.DB, inboxID, messageID, state string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		changed := db.Changed()
		m, err := db.GetMessage(context.Background(), inboxID, messageID)
		if err != nil {
			t.Fatal(err)
		}
		if m.State == state {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("message %s stuck in %s, want %s", messageID, m.State, state)
		}
	}
}

func adminKey(t *testing.T, data string) string {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(data, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(token))
}

// A submitted message loses its Bcc: header (every one, folded lines
// too) before it is queued, so no copy shows it; the Bcc recipients still
// get the message, as RCPT TO recipients. (The external recipient sends it
// through app.Submit; smtp's TestAuthenticatedLocalMailDropsBcc covers a
// submission to local inboxes only.)
func TestSubmissionDropsBcc(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--smtp-auth-insecure")
	ctx := context.Background()
	db := s.srv.db // its commits wake waitState
	self, err := db.InboxByAddress(ctx, "inbox@localhost")
	if err != nil {
		t.Fatal(err)
	}
	to, err := db.CreateInbox(ctx, self.ProjectID, store.NewInbox{Address: "to@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	hidden, err := db.CreateInbox(ctx, self.ProjectID, store.NewInbox{Address: "hidden@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	body := "From: inbox@localhost\r\nBcc: hidden@localhost,\r\n\tsecret@example.com\r\nTo: to@localhost, someone@example.org\r\n" +
		"BCC:another@example.com\r\nSubject: bcc\r\nbcc : obsolete@example.com\r\nX-Note: Bcc: stays in a value\r\n\r\nBcc: body text stays\r\n"
	if err := submit(s.smtp, adminKey(t, data), []string{"to@localhost", "hidden@localhost", "someone@example.org"}, body); err != nil {
		t.Fatal(err)
	}
	sent, _ := db.InboxMessages(ctx, self.ID)
	if len(sent) != 1 {
		t.Fatalf("%d outbound messages", len(sent))
	}
	waitState(t, db, self.ID, sent[0].ID, store.StatusDelivered)
	copies := map[string]string{"outbound": sent[0].ID}
	for name, ib := range map[string]store.Inbox{"to": to, "hidden": hidden} {
		msgs, _ := db.InboxMessages(ctx, ib.ID)
		if len(msgs) != 1 {
			t.Fatalf("%s got %d messages", name, len(msgs))
		}
		copies[name] = msgs[0].ID
	}
	for name, id := range copies {
		raw, err := db.Raw(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		names := headerNames(raw)
		if slices.Contains(names, "bcc") || !slices.Contains(names, "x-note") || !slices.Contains(names, "subject") {
			t.Errorf("%s copy has headers %v", name, names)
		}
		if !bytes.HasSuffix(raw, []byte("\r\n\r\nBcc: body text stays\r\n")) || !bytes.Contains(raw, []byte("X-Note: Bcc: stays in a value\r\n")) {
			t.Errorf("%s copy changed beyond the Bcc fields:\n%s", name, raw)
		}
	}
}

// With --smtp-auth-accept-any a real API key with messages:send still
// submits to the world; other credentials get no grant, and a From
// outside it is 550 5.7.1.
func TestAcceptAnyKeepsSubmission(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--smtp-auth-insecure", "--smtp-auth-accept-any")
	db := s.srv.db // its commits wake waitState
	if err := submit(s.smtp, adminKey(t, data), []string{"someone@example.org"}, "From: inbox@localhost\r\nSubject: out\r\n\r\nx\r\n"); err != nil {
		t.Fatal(err)
	}
	self, err := db.InboxByAddress(context.Background(), "inbox@localhost")
	if err != nil {
		t.Fatal(err)
	}
	sent, _ := db.InboxMessages(context.Background(), self.ID)
	if len(sent) != 1 || sent[0].Direction != "outbound" {
		t.Fatalf("sent %+v", sent)
	}
	waitState(t, db, self.ID, sent[0].ID, store.StatusCaptured)
	err = submit(s.smtp, "anything", []string{"someone@example.org"}, "From: inbox@localhost\r\nSubject: out\r\n\r\nx\r\n")
	var se *gosmtp.SMTPError
	if !errors.As(err, &se) || se.Code != 550 {
		t.Fatalf("no grant: %v", err)
	}
}

// An authenticated submitter may address the world, but an unknown
// address of a domain served here is 550 5.1.1 as for anyone (SPEC §2),
// never captured or relayed as if it were elsewhere.
func TestSubmissionToAnUnknownLocalAddress(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data, "--smtp-auth-insecure")
	err := submit(s.smtp, adminKey(t, data), []string{"nobody@localhost"}, "From: inbox@localhost\r\nSubject: out\r\n\r\nx\r\n")
	var se *gosmtp.SMTPError
	if !errors.As(err, &se) || se.Code != 550 || se.EnhancedCode != (gosmtp.EnhancedCode{5, 1, 1}) {
		t.Fatalf("unknown local address: %v, want 550 5.1.1", err)
	}
	self, err := s.srv.db.InboxByAddress(context.Background(), "inbox@localhost")
	if err != nil {
		t.Fatal(err)
	}
	if sent, _ := s.srv.db.InboxMessages(context.Background(), self.ID); len(sent) != 0 {
		t.Fatalf("stored %+v", sent)
	}
}
