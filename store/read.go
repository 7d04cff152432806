package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Address is a stored mail address.
type Address struct {
	Email string  `json:"email"`
	Name  *string `json:"name"`
}

// Message is a stored message row (without bodies and raw bytes).
type Message struct {
	ID, ThreadID, InboxID string
	Sequence              int64
	Direction, State      string
	Simulated, Echo       bool
	Subject, Preview      string
	From                  *Address
	To, Cc, Bcc, ReplyTo  []Address
	RFCMessageID          string // with angle brackets
	RFCMessageIDGenerated bool
	InReplyTo, References []string
	ThreadMatch           string
	AddressTag            *string
	ParseError            *string
	CreatedAt             time.Time
	Deleted               bool
	RawStored             bool // the raw message can be downloaded
}

const messageColumnsSQL = `id, thread_id, inbox_id, sequence, direction, state, simulated, echo, subject, preview,
	from_json, to_json, cc_json, bcc_json, reply_to_json, rfc_message_id, rfc_message_id_generated,
	in_reply_to_json, references_json, thread_match, address_tag, parse_error, created_at, deleted_at IS NOT NULL,
	direction = 'inbound' OR raw_size > 0`

func scanMessage(row rowScanner) (Message, error) {
	var m Message
	var from sql.NullString
	var to, cc, bcc, replyTo, irt, refs string
	var created int64
	err := row.Scan(&m.ID, &m.ThreadID, &m.InboxID, &m.Sequence, &m.Direction, &m.State, &m.Simulated, &m.Echo,
		&m.Subject, &m.Preview, &from, &to, &cc, &bcc, &replyTo, &m.RFCMessageID, &m.RFCMessageIDGenerated,
		&irt, &refs, &m.ThreadMatch, &m.AddressTag, &m.ParseError, &created, &m.Deleted, &m.RawStored)
	if err != nil {
		return Message{}, err
	}
	m.RFCMessageID = "<" + m.RFCMessageID + ">"
	m.CreatedAt = fromMS(created)
	if from.Valid {
		m.From = new(Address)
		if err := decodeAddress(from.String, m.From); err != nil {
			return Message{}, fmt.Errorf("message %s from: %w", m.ID, err)
		}
	}
	for _, c := range []struct {
		src string
		dst *[]Address
	}{{to, &m.To}, {cc, &m.Cc}, {bcc, &m.Bcc}, {replyTo, &m.ReplyTo}} {
		if err := decodeAddresses(c.src, c.dst); err != nil {
			return Message{}, fmt.Errorf("message %s columns: %w", m.ID, err)
		}
	}
	for _, c := range []struct {
		src string
		dst *[]string
	}{{irt, &m.InReplyTo}, {refs, &m.References}} {
		if err := decodeStrings(c.src, c.dst); err != nil {
			return Message{}, fmt.Errorf("message %s columns: %w", m.ID, err)
		}
	}
	return m, nil
}

// GetMessage returns one message of an inbox.
func (db *DB) GetMessage(ctx context.Context, inboxID, messageID string) (Message, error) {
	m, err := scanMessage(db.r.QueryRowContext(ctx, `SELECT `+messageColumnsSQL+` FROM messages WHERE id = ? AND inbox_id = ?`,
		messageID, inboxID))
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("message %s: %w", messageID, ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("get message: %w", err)
	}
	return m, nil
}

// ThreadMessages returns a thread's messages in sequence order.
func (db *DB) ThreadMessages(ctx context.Context, threadID string) ([]Message, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+messageColumnsSQL+` FROM messages WHERE thread_id = ? ORDER BY sequence, id`, threadID)
	return scanAll(rows, err, "thread messages", scanMessage)
}

// Raw returns the stored raw message (trace header plus the bytes as
// received).
func (db *DB) Raw(ctx context.Context, messageID string) ([]byte, error) {
	var buf bytes.Buffer
	if err := db.writeRaw(ctx, &buf, messageID, true); err != nil {
		return nil, fmt.Errorf("raw %s: %w", messageID, err)
	}
	return buf.Bytes(), nil
}

// Body is a message's parsed body.
type Body struct {
	Text, HTML    *string
	ExtractedText string
}

// GetBody returns a message's parsed body.
func (db *DB) GetBody(ctx context.Context, messageID string) (Body, error) {
	var b Body
	var extracted sql.NullString
	var packed []byte
	err := db.r.QueryRowContext(ctx, `SELECT text, html, extracted_text, packed FROM bodies WHERE message_id = ?`, messageID).
		Scan(&b.Text, &b.HTML, &extracted, &packed)
	if errors.Is(err, sql.ErrNoRows) {
		return Body{}, fmt.Errorf("body %s: %w", messageID, ErrNotFound)
	}
	if err != nil {
		return Body{}, fmt.Errorf("body: %w", err)
	}
	if packed == nil { // stored before migration 0007
		b.ExtractedText = extracted.String
		return b, nil
	}
	if b, err = db.bodies.unpack(packed); err != nil {
		return Body{}, fmt.Errorf("body %s: %w", messageID, err)
	}
	return b, nil
}

// Attachment is stored attachment metadata.
type Attachment struct {
	ID, Filename, ContentType, Disposition, ContentID, ScanStatus string
	Bytes                                                         int64
}

// Attachments lists a message's attachments in part order.
func (db *DB) Attachments(ctx context.Context, messageID string) ([]Attachment, error) {
	m, err := db.AttachmentsOf(ctx, []string{messageID})
	return m[messageID], err
}

// One statement for any number of messages (ids as a JSON list), prepared
// once, instead of an IN list whose length changes the SQL.
const sqlAttachmentsOf = `SELECT message_id, id, coalesce(filename, ''), content_type, disposition, coalesce(content_id, ''),
	scan_status, bytes FROM attachments WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY message_id, position`

// AttachmentsOf lists the attachments of several messages in one query
// (for list pages), by message id, each in part order.
func (db *DB) AttachmentsOf(ctx context.Context, messageIDs []string) (map[string][]Attachment, error) {
	out := map[string][]Attachment{}
	if len(messageIDs) == 0 {
		return out, nil
	}
	rows, err := db.readQuery(ctx, sqlAttachmentsOf, stringsJSON(messageIDs))
	if err != nil {
		return nil, fmt.Errorf("attachments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Attachment
		var msg string
		if err := rows.Scan(&msg, &a.ID, &a.Filename, &a.ContentType, &a.Disposition, &a.ContentID, &a.ScanStatus, &a.Bytes); err != nil {
			return nil, fmt.Errorf("attachments: %w", err)
		}
		out[msg] = append(out[msg], a)
	}
	return out, rows.Err()
}

// AttachmentOf returns one attachment of a message that is not deleted.
func (db *DB) AttachmentOf(ctx context.Context, messageID, attachmentID string) (Attachment, error) {
	atts, err := db.Attachments(ctx, messageID)
	if err != nil {
		return Attachment{}, err
	}
	for _, a := range atts {
		if a.ID == attachmentID {
			return a, nil
		}
	}
	return Attachment{}, fmt.Errorf("attachment %s: %w", attachmentID, ErrNotFound)
}

// Envelope returns the SMTP envelope stored with a message.
func (db *DB) Envelope(ctx context.Context, messageID string) (Envelope, error) {
	var e Envelope
	var rcpts string
	var auth sql.NullString
	err := db.r.QueryRowContext(ctx, `SELECT mail_from, rcpt_to, remote_ip, helo, tls, auth_user FROM envelopes WHERE message_id = ?`,
		messageID).Scan(&e.MailFrom, &rcpts, &e.RemoteIP, &e.Helo, &e.TLS, &auth)
	if errors.Is(err, sql.ErrNoRows) {
		return Envelope{}, fmt.Errorf("envelope %s: %w", messageID, ErrNotFound)
	}
	if err != nil {
		return Envelope{}, fmt.Errorf("envelope: %w", err)
	}
	e.AuthUser = auth.String
	if err := json.Unmarshal([]byte(rcpts), &e.RcptTo); err != nil {
		return Envelope{}, fmt.Errorf("envelope rcpt: %w", err)
	}
	return e, nil
}

// InboxMessages returns an inbox's messages, newest first (tests and
// tools; the API pages with cursors).
func (db *DB) InboxMessages(ctx context.Context, inboxID string) ([]Message, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+messageColumnsSQL+` FROM messages WHERE inbox_id = ? AND deleted_at IS NULL
		ORDER BY created_at DESC, id DESC`, inboxID)
	return scanAll(rows, err, "inbox messages", scanMessage)
}
