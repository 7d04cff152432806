package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// InboxPage returns up to limit messages of an inbox that are not deleted,
// newest first by created_at then id, strictly after the position after.
// direction ("inbound", "outbound" or "") and q filter.
func (db *DB) InboxPage(ctx context.Context, inboxID string, q Query, direction string, after *TimeKey, limit int) ([]Message, error) {
	if q.none {
		return nil, nil
	}
	if !q.Empty() {
		return db.searchMessages(ctx, inboxID, q, direction, after, limit)
	}
	var b strings.Builder
	args := []any{inboxID}
	b.WriteString(`SELECT ` + messageColumnsSQL + ` FROM messages WHERE inbox_id = ? AND deleted_at IS NULL`)
	if direction != "" {
		b.WriteString(` AND direction = ?`)
		args = append(args, direction)
	}
	if after != nil {
		b.WriteString(` AND (created_at, id) < (?, ?)`)
		args = append(args, after.At, after.ID)
	}
	b.WriteString(` ORDER BY created_at DESC, id DESC LIMIT ?`)
	args = append(args, limit)
	return db.queryMessages(ctx, "inbox page", b.String(), args...)
}

// sqlSearchKeys pages the search keys of a query's matches newest first,
// from a key down (FTS5 serves the order and the bound from its index).
const sqlSearchKeys = `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid BETWEEN ? AND ?
	ORDER BY rowid DESC LIMIT ?`

// sqlMessagesOfKeys reads the messages of search keys (a JSON list).
const sqlMessagesOfKeys = `SELECT ` + messageColumnsSQL + ` FROM messages WHERE rowid IN
	(SELECT k.message FROM json_each(?) j JOIN search_keys k ON k.key = j.value) AND deleted_at IS NULL`

// searchMessages is InboxPage with a search: the newest matches, found
// in key order (searchindex.go) without collecting every match. Keys order
// messages by created_at only, so each round takes whole groups (one
// millisecond each) and the page is sorted exactly within them: it reads
// limit+1 keys below the bound and keeps those above the last one's group,
// or, when all share a group, reads the whole group.
func (db *DB) searchMessages(ctx context.Context, inboxID string, q Query, direction string, after *TimeKey, limit int) ([]Message, error) {
	if err := db.awaitSearch(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	match := q.inInbox(inboxID, direction)
	top := int64(math.MaxInt64)
	if after != nil {
		_, top = groupKeys(searchGroup(after.At))
	}
	var page []Message
	for {
		keys, err := db.searchKeys(ctx, match, math.MinInt64, top, limit+1)
		if err != nil {
			return nil, err
		}
		done := len(keys) <= limit // every match below top is in keys
		if !done {
			last := keys[limit] >> slotBits
			if keys[0]>>slotBits == last {
				// One group holds them all: read all of it.
				lo, _ := groupKeys(last)
				if keys, err = db.searchKeys(ctx, match, lo, top, -1); err != nil {
					return nil, err
				}
				if lo == math.MinInt64 {
					done = true // nothing is below the lowest group
				}
				top = lo - 1
			} else {
				// Keep the groups above the last key's: they are whole.
				for len(keys) > 0 && keys[len(keys)-1]>>slotBits == last {
					keys = keys[:len(keys)-1]
				}
				lo, _ := groupKeys(last)
				top = lo | slotMask
			}
		}
		rows, err := db.queryMessages(ctx, "search", sqlMessagesOfKeys, int64sJSON(keys))
		if err != nil {
			return nil, err
		}
		for _, m := range rows {
			if after == nil || newestFirst(after.At, after.ID, ms(m.CreatedAt), m.ID) {
				page = append(page, m)
			}
		}
		if done || len(page) >= limit {
			break
		}
	}
	slices.SortFunc(page, func(a, b Message) int {
		if newestFirst(ms(a.CreatedAt), a.ID, ms(b.CreatedAt), b.ID) {
			return -1
		}
		return 1
	})
	return page[:min(limit, len(page))], nil
}

func int64sJSON(l []int64) string {
	b, _ := json.Marshal(l)
	return string(b)
}

// newestFirst reports whether (at, id) comes before (at2, id2) in a list
// newest first by a time, then id.
func newestFirst(at int64, id string, at2 int64, id2 string) bool {
	return at > at2 || at == at2 && id > id2
}

// searchKeys returns up to limit (−1: all) search keys of match's matches
// from hi down to lo, newest first.
func (db *DB) searchKeys(ctx context.Context, match string, lo, hi int64, limit int) ([]int64, error) {
	rows, err := db.readQuery(ctx, sqlSearchKeys, match, lo, hi, limit)
	return scanAll(rows, err, "search", func(r rowScanner) (k int64, err error) { return k, r.Scan(&k) })
}

// commonTerm reports whether a search matches more than searchProbe
// messages of the inbox. Few matches are cheapest collected and sorted;
// many are cheapest found by walking the newest rows and checking each.
// Counting takes a millisecond for a common term at 1M messages, a fifth
// of a thread-list search, so the answer is kept for probeTTL: the
// console pages through the same search. A stale answer costs speed only
// (both strategies find the same threads).
func (db *DB) commonTerm(ctx context.Context, inboxID string, q Query) (bool, error) {
	key := fmt.Sprint(inboxID, "\x00", db.searchProbe, "\x00", q.match)
	if common, ok := db.probes.get(key, db.now()); ok {
		return common, nil
	}
	var n int
	err := db.readRow(ctx, `SELECT count(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)`,
		q.inInbox(inboxID, ""), db.searchProbe).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("search: %w", err)
	}
	db.probes.put(key, n >= db.searchProbe, db.now())
	return n >= db.searchProbe, nil
}

// probeTTL is how long commonTerm's answer is kept; probeEntries bounds
// how many are.
const (
	probeTTL     = 10 * time.Second
	probeEntries = 1024
)

// probeCache holds commonTerm's recent answers.
type probeCache struct {
	mu sync.Mutex
	m  map[string]probeAnswer
}

type probeAnswer struct {
	common bool
	at     time.Time
}

func (c *probeCache) get(key string, now time.Time) (common, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.m[key]
	if !ok || now.Sub(a.at) >= probeTTL || now.Before(a.at) {
		return false, false
	}
	return a.common, true
}

func (c *probeCache) put(key string, common bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= probeEntries {
		c.m = map[string]probeAnswer{}
	}
	c.m[key] = probeAnswer{common, now}
}

func (db *DB) queryMessages(ctx context.Context, what, query string, args ...any) ([]Message, error) {
	rows, err := db.readQuery(ctx, query, args...)
	return scanAll(rows, err, what, scanMessage)
}

// A thread's row once one of its messages is deleted. sqlThreadCountAfterDelete:
// one fewer, has_attachments worked out again only when the deleted
// message had attachments, and no preview once none is left (the thread
// leaves the list, but GET still shows it). sqlThreadLatestAfterDelete:
// when it was the latest, the preview and direction of the latest left
// (read backwards through the (thread_id, sequence) index, so a long
// thread is not scanned), so that the deleted one's text does not stay on
// the thread. last_message_at stays: it moves forward only (SPEC §4), and
// the thread list's keyset order relies on it.
// ?1 is the thread, ?2 the deleted message's id, ?3 its sequence.
const (
	sqlThreadCountAfterDelete = `UPDATE threads SET message_count = message_count - 1,
		preview = CASE WHEN message_count = 1 THEN '' ELSE preview END,
		has_attachments = CASE WHEN EXISTS (SELECT 1 FROM attachments WHERE message_id = ?2)
			THEN EXISTS (SELECT 1 FROM messages m JOIN attachments a ON a.message_id = m.id WHERE m.thread_id = ?1 AND m.deleted_at IS NULL)
			ELSE has_attachments END
		WHERE id = ?1`
	sqlThreadLatestAfterDelete = `UPDATE threads SET preview = l.preview, last_message_direction = l.direction
		FROM (SELECT sequence, preview, direction FROM messages
			WHERE thread_id = ?1 AND deleted_at IS NULL ORDER BY sequence DESC LIMIT 1) AS l
		WHERE threads.id = ?1 AND l.sequence < ?3`
)

// DeleteMessage soft-deletes a message: it leaves lists and search, its
// body and raw answer not found, and its thread's count drops.
func (db *DB) DeleteMessage(ctx context.Context, inboxID, messageID string) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		var threadID string
		var rowid, seq int64
		err := tx.QueryRowContext(ctx, `UPDATE messages SET deleted_at = ? WHERE id = ? AND inbox_id = ? AND deleted_at IS NULL
			RETURNING thread_id, rowid, sequence`, ms(db.now()), messageID, inboxID).Scan(&threadID, &rowid, &seq)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("message %s: %w", messageID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("delete message: %w", err)
		}
		for _, q := range []string{sqlThreadCountAfterDelete, sqlThreadLatestAfterDelete} {
			if _, err := tx.ExecContext(ctx, q, threadID, messageID, seq); err != nil {
				return fmt.Errorf("delete message: %w", err)
			}
		}
		return dropSearchRows(ctx, tx, `m.rowid = ?`, rowid)
	})
}

// DeleteInboxMessages soft-deletes every message of an inbox that is not
// deleted yet, as DeleteMessage does each one, in one transaction: they
// leave lists and search, and every thread of the inbox drops to no
// message (so it leaves the thread list too). It returns how many it
// deleted. The inbox, its threads' ids and missing-parent links stay, so a
// reply to a deleted message still joins its thread, and a redelivered
// message is stored again (sqlFindIDs).
func (db *DB) DeleteInboxMessages(ctx context.Context, inboxID string) (int64, error) {
	var n int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if err := dropSearchRows(ctx, tx, `m.inbox_id = ? AND m.deleted_at IS NULL`, inboxID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE messages SET deleted_at = ? WHERE inbox_id = ? AND deleted_at IS NULL`, ms(db.now()), inboxID)
		if err != nil {
			return fmt.Errorf("delete inbox messages: %w", err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("delete inbox messages: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE threads SET message_count = 0, preview = '' WHERE inbox_id = ? AND message_count <> 0`, inboxID); err != nil {
			return fmt.Errorf("delete inbox messages: %w", err)
		}
		return nil
	})
	return n, err
}

// blobChunk is how much of a large blob one query reads when streaming.
const blobChunk = 1 << 20

// streamBlob writes a blob to w inside one read transaction, so a 25 MB
// message is never held in memory whole: first the row's own data (in
// chunks, for blobs stored before migration 6 or held in one row), then its
// chunk rows in order (see migration 0006).
func (db *DB) streamBlob(ctx context.Context, w io.Writer, table, key string, id any, chunkTable, chunkKey string, chunkID string) error {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var size int64
	err = tx.QueryRowContext(ctx, `SELECT length(data) FROM `+table+` WHERE `+key+` = ?`, id).Scan(&size)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	var buf []byte
	for off := int64(0); off < size; off += blobChunk {
		if err := tx.QueryRowContext(ctx, `SELECT substr(data, ?, ?) FROM `+table+` WHERE `+key+` = ?`, off+1, blobChunk, id).Scan(&buf); err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT data FROM `+chunkTable+` WHERE `+chunkKey+` = ? ORDER BY seq`, chunkID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&buf); err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return rows.Err()
}

// WriteRaw streams the stored raw message to w; a deleted message is not
// found.
func (db *DB) WriteRaw(ctx context.Context, w io.Writer, messageID string) error {
	if err := db.writeRaw(ctx, w, messageID, false); err != nil {
		return fmt.Errorf("raw %s: %w", messageID, err)
	}
	return nil
}

// writeRaw writes the trace header (small), then the bytes as received.
// Plain bytes (a large message's chunks above all) are streamed; the
// compressed bytes of a message received in memory (at most 1 MiB) are
// read and decoded whole.
func (db *DB) writeRaw(ctx context.Context, w io.Writer, messageID string, deleted bool) error {
	var trace []byte
	var pk, size int64
	var stored packedRaw
	err := db.r.QueryRowContext(ctx, `SELECT m.pk, m.raw_size, c.trace, c.raw_format, CASE WHEN c.raw_format = 0 THEN NULL ELSE c.data END
		FROM messages m JOIN contents c ON c.message = m.pk
		WHERE m.id = ? AND (m.deleted_at IS NULL OR ?)`, messageID, deleted).Scan(&pk, &size, &trace, &stored.format, &stored.data)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	var raw []byte
	if stored.format != rawPlain {
		if raw, err = stored.unpack(size); err != nil {
			return err
		}
	}
	if len(trace) > 0 {
		if _, err := w.Write(trace); err != nil {
			return err
		}
	}
	if stored.format != rawPlain {
		_, err = w.Write(raw)
		return err
	}
	return db.streamBlob(ctx, w, "contents", "message", pk, "raw_chunks", "message_id", messageID)
}

// WriteAttachment streams an attachment's decoded bytes to w.
func (db *DB) WriteAttachment(ctx context.Context, w io.Writer, attachmentID string) error {
	err := db.streamBlob(ctx, w, "attachments", "id", attachmentID, "attachment_chunks", "attachment_id", attachmentID)
	if err != nil {
		return fmt.Errorf("attachment %s: %w", attachmentID, err)
	}
	return nil
}

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
	var packed []byte
	err := db.r.QueryRowContext(ctx, `SELECT c.body FROM messages m JOIN contents c ON c.message = m.pk WHERE m.id = ?`, messageID).Scan(&packed)
	if err == nil && packed == nil {
		err = sql.ErrNoRows
	}
	if errors.Is(err, sql.ErrNoRows) {
		return Body{}, fmt.Errorf("body %s: %w", messageID, ErrNotFound)
	}
	if err != nil {
		return Body{}, fmt.Errorf("body: %w", err)
	}
	b, err := db.bodies.unpack(packed)
	if err != nil {
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
	var from, rcpts, ip, helo, auth sql.NullString
	var tls sql.NullBool
	err := db.r.QueryRowContext(ctx, `SELECT env_mail_from, env_rcpt_to, env_remote_ip, env_helo, env_tls, env_auth_user
		FROM messages WHERE id = ?`, messageID).Scan(&from, &rcpts, &ip, &helo, &tls, &auth)
	if err == nil && !rcpts.Valid { // not an inbound message
		err = sql.ErrNoRows
	}
	if errors.Is(err, sql.ErrNoRows) {
		return Envelope{}, fmt.Errorf("envelope %s: %w", messageID, ErrNotFound)
	}
	if err != nil {
		return Envelope{}, fmt.Errorf("envelope: %w", err)
	}
	e.MailFrom, e.RemoteIP, e.Helo, e.TLS, e.AuthUser = from.String, ip.String, helo.String, tls.Bool, auth.String
	if err := json.Unmarshal([]byte(rcpts.String), &e.RcptTo); err != nil {
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
