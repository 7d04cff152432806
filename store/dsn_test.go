package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// dsnRaw is a Postfix-style bounce (multipart/report, RFC 3464) for the
// message origID, with one per-recipient block per entry of blocks.
func dsnRaw(ownID, origID string, blocks ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "From: MAILER-DAEMON@mx.example.org (Mail Delivery System)\r\nTo: inbox@localhost\r\n"+
		"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: <%s>\r\nMIME-Version: 1.0\r\n"+
		"Content-Type: multipart/report; report-type=delivery-status;\r\n\tboundary=\"B/mx\"\r\n\r\n", ownID)
	b.WriteString("--B/mx\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n\r\n")
	b.WriteString("--B/mx\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.org\r\n")
	for _, bl := range blocks {
		b.WriteString("\r\n" + strings.ReplaceAll(bl, "\n", "\r\n"))
	}
	fmt.Fprintf(&b, "\r\n--B/mx\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: inbox@localhost\r\nMessage-ID: <%s>\r\nSubject: hello\r\n"+
		"\r\n--B/mx--\r\n", origID)
	return b.String()
}

// sendTo stores an outbound message from inboxID to each address with route.
func sendTo(t *testing.T, db *DB, inboxID, rfcID, route string, emails ...string) string {
	t.Helper()
	var rs []Recipient
	for _, e := range emails {
		rs = append(rs, Recipient{Email: e, Type: "to", Route: route})
	}
	raw := "From: inbox@localhost\r\nTo: " + strings.Join(emails, ", ") + "\r\nMessage-ID: <" + rfcID + ">\r\nSubject: hello\r\n\r\nHi.\r\n"
	res, err := db.Send(context.Background(), SendRequest{
		Out: Outgoing{InboxID: inboxID, Raw: []byte(raw), Recipients: rs, Confirmed: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.MessageID
}

// markSent runs the relay worker's bookkeeping: every due delivery is sent.
func markSent(t *testing.T, db *DB) {
	t.Helper()
	ctx := context.Background()
	cs, err := db.ClaimDeliveries(ctx, Claim{Messages: 100, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var rs []DeliveryResult
	for _, c := range cs {
		rs = append(rs, DeliveryResult{ID: c.ID, Status: StatusSent, Code: 250, Message: "2.0.0 Ok: queued"})
	}
	if err := db.RecordDeliveries(ctx, rs); err != nil {
		t.Fatal(err)
	}
}

type deliveryRow struct {
	Email, Status string
	Code          sql.NullInt64
	Message       sql.NullString
	NextAttempt   sql.NullInt64
	UpdatedAt     int64
}

// snapshot is a message's state and its deliveries, in recipient order.
func snapshot(t *testing.T, db *DB, messageID string) (string, []deliveryRow) {
	t.Helper()
	var state string
	if err := db.r.QueryRow(`SELECT state FROM messages WHERE id = ?`, messageID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	rows, err := db.r.Query(`SELECT email, status, smtp_code, smtp_message, next_attempt_at, updated_at
		FROM deliveries WHERE message_id = ? ORDER BY id`, messageID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []deliveryRow
	for rows.Next() {
		var d deliveryRow
		if err := rows.Scan(&d.Email, &d.Status, &d.Code, &d.Message, &d.NextAttempt, &d.UpdatedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return state, out
}

// ingestDSN stores raw in inboxID and checks it was stored as an ordinary
// inbound message, with its report parts as attachments.
func ingestDSN(t *testing.T, db *DB, inboxID, raw string) {
	t.Helper()
	ctx := context.Background()
	in := incoming(inboxID, raw)
	if in.Parsed.DSN == nil {
		t.Fatalf("test input is not a DSN: %s", in.Parsed.ParseError)
	}
	d, err := db.Ingest(ctx, in)
	if err != nil || len(d) != 1 || d[0].MessageID == "" {
		t.Fatalf("ingest DSN: %+v %v", d, err)
	}
	m, err := db.GetMessage(ctx, inboxID, d[0].MessageID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Direction != "inbound" || m.State != "received" || m.Subject != "Undelivered Mail Returned to Sender" {
		t.Errorf("DSN stored as %+v", m)
	}
	atts, err := db.Attachments(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, a := range atts {
		types = append(types, a.ContentType)
	}
	if got := strings.Join(types, ","); got != "message/delivery-status,text/rfc822-headers" {
		t.Errorf("DSN attachments %s", got)
	}
}

const (
	failedAlice = "Final-Recipient: rfc822; ALICE@Example.com\nOriginal-Recipient: rfc822;alice@example.com\nAction: failed\n" +
		"Status: 5.1.1\nRemote-MTA: dns; mx1.example.com [192.0.2.10]\nDiagnostic-Code: smtp; 550 5.1.1 <alice@example.com>:\n" +
		"    Recipient address rejected: User unknown\n"
	delayedBob = "Final-Recipient: rfc822; bob@example.com\nAction: delayed\nStatus: 4.4.1\n" +
		"Diagnostic-Code: X-Postfix; connect to mx.example.com[192.0.2.10]:25: Connection timed out\n"
)

func TestDSNBouncesTheFailedRecipient(t *testing.T) {
	db, b := openTest(t)
	msg := sendTo(t, db, b.Inbox.ID, "out-1@localhost", "relay", "alice@example.com", "bob@example.com")
	markSent(t, db)
	state, before := snapshot(t, db, msg)
	if state != StatusSent {
		t.Fatalf("state before the DSN: %s", state)
	}

	ingestDSN(t, db, b.Inbox.ID, dsnRaw("bounce-1@mx.example.org", "out-1@localhost", failedAlice, delayedBob))

	state, after := snapshot(t, db, msg)
	if state != StatusBounced {
		t.Errorf("message state %s, want bounced", state)
	}
	alice := after[0]
	if alice.Status != StatusBounced || alice.Code.Int64 != 550 || alice.NextAttempt.Valid || alice.UpdatedAt < before[0].UpdatedAt ||
		alice.Message.String != "5.1.1 <alice@example.com>: Recipient address rejected: User unknown" {
		t.Errorf("failed recipient: %+v", alice)
	}
	if after[1] != before[1] {
		t.Errorf("delayed recipient changed:\n%+v\n%+v", before[1], after[1])
	}
}

func TestDSNNamingAnAliasAndStatusOnly(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	msg := sendTo(t, db, b.Inbox.ID, "out-2@localhost", "capture", "carol@example.com", "dan@example.com")
	// The relay rewrote the Message-ID; the DSN names the rewritten one.
	if _, err := db.ConfirmMessageID(ctx, msg, "0100018e-rewritten@email.amazonses.com"); err != nil {
		t.Fatal(err)
	}
	ingestDSN(t, db, b.Inbox.ID, dsnRaw("bounce-2@mx.example.org", "0100018e-rewritten@email.amazonses.com",
		"Final-Recipient: rfc822; dan@example.com\nAction: failed\nStatus: 5.4.4\n"))

	state, after := snapshot(t, db, msg)
	if state != StatusBounced {
		t.Errorf("message state %s, want bounced", state)
	}
	if after[0].Status != StatusCaptured || after[0].Code.Valid {
		t.Errorf("other recipient changed: %+v", after[0])
	}
	if d := after[1]; d.Status != StatusBounced || d.Code.Int64 != 550 || d.Message.String != "5.4.4" {
		t.Errorf("failed recipient: %+v", d)
	}
}

func TestDSNForAnotherMessageChangesNothing(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	mine := sendTo(t, db, b.Inbox.ID, "out-3@localhost", "relay", "alice@example.com", "bob@example.com")
	theirs := sendTo(t, db, other.ID, "out-4@localhost", "relay", "alice@example.com")
	markSent(t, db)
	stateMine, mineBefore := snapshot(t, db, mine)
	stateTheirs, theirsBefore := snapshot(t, db, theirs)

	for _, tc := range []struct{ name, origID string }{
		{"unknown Message-ID", "nobody-sent-this@localhost"},
		{"another inbox's message", "out-4@localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ingestDSN(t, db, b.Inbox.ID, dsnRaw("bounce-"+tc.origID, tc.origID, failedAlice))
			for _, c := range []struct {
				id, state string
				rows      []deliveryRow
			}{{mine, stateMine, mineBefore}, {theirs, stateTheirs, theirsBefore}} {
				state, rows := snapshot(t, db, c.id)
				if state != c.state || fmt.Sprint(rows) != fmt.Sprint(c.rows) {
					t.Errorf("message %s changed: %s %+v, was %s %+v", c.id, state, rows, c.state, c.rows)
				}
			}
		})
	}
}

func TestDSNCode(t *testing.T) {
	for _, tc := range []struct {
		diagnostic, status string
		want               int
	}{
		{"550 5.1.1 user unknown", "5.1.1", 550},
		{"550-5.1.1 The email account that you tried to reach does not exist.", "5.1.1", 550},
		{"host mx.example.com[192.0.2.1] said: 452 4.2.2 mailbox full", "4.2.2", 452},
		{"connect to mx.example.com[10.250.1.5]:25: Connection refused", "5.4.4", 550},
		{"Host or domain name not found", "4.4.3", 450},
		{"", "5.0.0", 550},
		{"", "", 0},
		{"RESOLVER.ADR.RecipientNotFound; not found", "2.0.0", 0},
	} {
		if got := dsnCode(tc.diagnostic, tc.status); got != tc.want {
			t.Errorf("dsnCode(%q, %q) = %d, want %d", tc.diagnostic, tc.status, got, tc.want)
		}
	}
}

// TestWithoutReplyCode: a DSN's diagnostic is stored as a relay's reply
// is (smtp/relay.go, go-smtp's SMTPError): without the reply code that
// smtp_code holds, and a multi-line reply as its lines, each without the
// code and enhanced code the lines repeat (RFC 2034), here unfolded into
// one line by the DSN's header folding.
func TestWithoutReplyCode(t *testing.T) {
	for _, tc := range []struct{ diagnostic, want string }{
		{"550 5.1.1 user unknown", "5.1.1 user unknown"},
		{"550-5.1.1 The email account that you tried to reach does not exist. Please try 550-5.1.1 double-checking the recipient's email address for typos or 550-5.1.1 unnecessary spaces. Learn more at 550 5.1.1 https://support.google.com/mail/?p=NoSuchUser",
			"5.1.1 The email account that you tried to reach does not exist. Please try\ndouble-checking the recipient's email address for typos or\nunnecessary spaces. Learn more at\nhttps://support.google.com/mail/?p=NoSuchUser"},
		{"550-Mailbox unavailable 550 try later", "Mailbox unavailable\ntry later"},
		{"550 5.1.1 see 550-5.1.1 in the logs", "5.1.1 see 550-5.1.1 in the logs"}, // one line: kept
		{"host mx[192.0.2.1] said: 550 5.1.1 unknown", "host mx[192.0.2.1] said: 550 5.1.1 unknown"},
		{"5500 odd", "5500 odd"},
	} {
		if got := withoutReplyCode(tc.diagnostic, dsnCode(tc.diagnostic, "")); got != tc.want {
			t.Errorf("withoutReplyCode(%q) = %q, want %q", tc.diagnostic, got, tc.want)
		}
	}
}
