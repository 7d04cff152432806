package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// CursorSecret returns the server secret that signs list cursors, creating
// it on first use. It lives in the database so cursors survive restarts.
func (db *DB) CursorSecret(ctx context.Context) ([]byte, error) {
	var secret []byte
	err := db.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = 'cursor_secret'`).Scan(&secret)
	if err == nil {
		return secret, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("cursor secret: %w", err)
	}
	fresh := make([]byte, 32)
	db.readRand(fresh)
	err = db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ('cursor_secret', ?) ON CONFLICT DO NOTHING`, fresh); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = 'cursor_secret'`).Scan(&secret)
	})
	if err != nil {
		return nil, fmt.Errorf("cursor secret: %w", err)
	}
	return secret, nil
}

// GetInbox returns one inbox of a project.
func (db *DB) GetInbox(ctx context.Context, projectID, inboxID string) (Inbox, error) {
	ib, err := scanInbox(db.readRow(ctx, `SELECT `+inboxColumns+` FROM inboxes WHERE id = ? AND project_id = ?`, inboxID, projectID))
	if errors.Is(err, sql.ErrNoRows) {
		return Inbox{}, fmt.Errorf("inbox %s: %w", inboxID, ErrNotFound)
	}
	if err != nil {
		return Inbox{}, fmt.Errorf("get inbox: %w", err)
	}
	return ib, nil
}

// InboxPatch holds the fields of an inbox update; nil leaves a field.
type InboxPatch struct {
	DisplayName    *string
	SendPolicy     *string
	AllowedDomains *[]string
}

// UpdateInbox applies a patch and returns the inbox.
func (db *DB) UpdateInbox(ctx context.Context, projectID, inboxID string, p InboxPatch) (Inbox, error) {
	var ib Inbox
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var domains any
		if p.AllowedDomains != nil {
			b, _ := json.Marshal(nonNil(*p.AllowedDomains))
			domains = string(b)
		}
		var err error
		ib, err = scanInbox(tx.QueryRowContext(ctx, `UPDATE inboxes SET display_name = coalesce(?, display_name),
				send_policy = coalesce(?, send_policy), allowed_domains = coalesce(?, allowed_domains)
			WHERE id = ? AND project_id = ? RETURNING `+inboxColumns, p.DisplayName, p.SendPolicy, domains, inboxID, projectID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("inbox %s: %w", inboxID, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return Inbox{}, fmt.Errorf("update inbox: %w", err)
	}
	return ib, nil
}

// Thread is a thread row.
type Thread struct {
	ID, InboxID, Subject, Preview string
	MessageCount                  int64
	LastMessageAt                 time.Time
	LastMessageDirection          string
	CreatedAt                     time.Time
	HasAttachments                bool  // some message up to LastSequence has attachments
	LastSequence                  int64 // the highest sequence given out in the thread
}

// MayHaveAttachments reports whether a page of the thread's messages may
// hold attachments. HasAttachments speaks for the sequences up to
// LastSequence only: a page read after the thread row (a long-poll's, say)
// may hold a later message, the thread's first with attachments.
func (t Thread) MayHaveAttachments(page []Message) bool {
	return t.HasAttachments || len(page) > 0 && page[len(page)-1].Sequence > t.LastSequence
}

const threadColumns = `t.id, t.inbox_id, t.subject, t.preview, t.message_count, t.last_message_at, t.last_message_direction, t.created_at,
	t.has_attachments, t.last_sequence`

func scanThread(row rowScanner) (Thread, error) {
	var sc threadScan
	if err := row.Scan(sc.dest()...); err != nil {
		return Thread{}, err
	}
	return sc.thread(), nil
}

// threadScan holds the threadColumns of a row while it is scanned.
type threadScan struct {
	t             Thread
	last, created int64
}

func (sc *threadScan) dest() []any {
	t := &sc.t
	return []any{&t.ID, &t.InboxID, &t.Subject, &t.Preview, &t.MessageCount, &sc.last, &t.LastMessageDirection, &sc.created,
		&t.HasAttachments, &t.LastSequence}
}

func (sc *threadScan) thread() Thread {
	t := sc.t
	t.LastMessageAt, t.CreatedAt = fromMS(sc.last), fromMS(sc.created)
	return t
}

// GetInboxThread returns an inbox of the project and one of its threads in
// one query (the thread routes need both on every request).
func (db *DB) GetInboxThread(ctx context.Context, projectID, inboxID, threadID string) (Inbox, Thread, error) {
	var is inboxScan
	var ts threadScan
	err := db.readRow(ctx, `SELECT i.*, `+threadColumns+`
		FROM (SELECT `+inboxColumns+` FROM inboxes WHERE id = ? AND project_id = ?) i JOIN threads t ON t.inbox_id = i.id
		WHERE t.id = ?`, inboxID, projectID, threadID).Scan(append(is.dest(), ts.dest()...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return Inbox{}, Thread{}, fmt.Errorf("thread %s: %w", threadID, ErrNotFound)
	}
	if err != nil {
		return Inbox{}, Thread{}, fmt.Errorf("get thread: %w", err)
	}
	ib, err := is.inbox()
	return ib, ts.thread(), err
}

// TimeKey is a keyset position in a list ordered by a time, then by id
// (newest first, or oldest first for the lists of a project's inboxes,
// keys and webhook endpoints).
type TimeKey struct {
	At int64  `json:"a"` // unix ms
	ID string `json:"i"`
}

// createdPage ends the query of a list ordered oldest first by created_at,
// then id: at most limit rows (−1: every one) strictly after the position
// after (from the first when nil). It returns the SQL to append and the
// query's arguments args followed by the page's.
func createdPage(after *TimeKey, limit int, args ...any) (string, []any) {
	tail := ` ORDER BY created_at, id LIMIT ?`
	if after != nil {
		tail = ` AND (created_at, id) > (?, ?)` + tail
		args = append(args, after.At, after.ID)
	}
	return tail, append(args, limit)
}

// ListThreads returns up to limit threads of an inbox, newest first by
// last_message_at then id, strictly after the position after (nil = from
// the top). A non-empty query keeps threads with a matching message.
func (db *DB) ListThreads(ctx context.Context, inboxID string, q Query, after *TimeKey, limit int) ([]Thread, error) {
	var b strings.Builder
	args := []any{inboxID}
	b.WriteString(`SELECT ` + threadColumns + ` FROM threads t WHERE t.inbox_id = ? AND t.message_count > 0`)
	if after != nil {
		b.WriteString(` AND (t.last_message_at, t.id) < (?, ?)`)
		args = append(args, after.At, after.ID)
	}
	if !q.Empty() {
		if err := db.awaitSearch(ctx); err != nil {
			return nil, err
		}
		common, err := db.commonTerm(ctx, q)
		if err != nil {
			return nil, err
		}
		if common {
			// Walk the inbox's threads newest first and keep those with a
			// matching message: a common term fills a page after a few.
			b.WriteString(` AND EXISTS (SELECT 1 FROM messages m WHERE m.thread_id = t.id AND m.deleted_at IS NULL
				AND EXISTS (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? AND rowid = m.rowid))`)
			args = append(args, q.match)
		} else {
			// Few matches: collect their threads, then sort those.
			b.WriteString(` AND t.id IN (SELECT m.thread_id FROM messages_fts f JOIN messages m ON m.rowid = f.rowid
				WHERE messages_fts MATCH ? AND m.inbox_id = ? AND m.deleted_at IS NULL)`)
			args = append(args, q.match, inboxID)
		}
	}
	b.WriteString(` ORDER BY t.last_message_at DESC, t.id DESC LIMIT ?`)
	args = append(args, limit)
	rows, err := db.r.QueryContext(ctx, b.String(), args...)
	return scanAll(rows, err, "list threads", scanThread)
}

// SeqKey is a keyset position in a thread: sequence, then id.
type SeqKey struct {
	Seq int64  `json:"s"`
	ID  string `json:"i"`
}

// ThreadPage returns up to limit messages of a thread that are not deleted,
// in sequence order, strictly after the position after (nil = from the
// first) and with a sequence above afterSeq.
func (db *DB) ThreadPage(ctx context.Context, threadID string, after *SeqKey, afterSeq int64, limit int) ([]Message, error) {
	var b strings.Builder
	args := []any{threadID, afterSeq}
	b.WriteString(`SELECT ` + messageColumnsSQL + ` FROM messages WHERE thread_id = ? AND deleted_at IS NULL AND sequence > ?`)
	if after != nil {
		b.WriteString(` AND (sequence, id) > (?, ?)`)
		args = append(args, after.Seq, after.ID)
	}
	b.WriteString(` ORDER BY sequence, id LIMIT ?`)
	args = append(args, limit)
	return db.queryMessages(ctx, "thread page", b.String(), args...)
}

// InboxPage returns up to limit messages of an inbox that are not deleted,
// newest first by created_at then id, strictly after the position after.
// direction ("inbound", "outbound" or "") and q filter.
func (db *DB) InboxPage(ctx context.Context, inboxID string, q Query, direction string, after *TimeKey, limit int) ([]Message, error) {
	var b strings.Builder
	args := []any{inboxID}
	common := false
	if !q.Empty() {
		if err := db.awaitSearch(ctx); err != nil {
			return nil, err
		}
		var err error
		if common, err = db.commonTerm(ctx, q); err != nil {
			return nil, err
		}
	}
	if q.Empty() || common {
		b.WriteString(`SELECT ` + messageColumnsSQL + ` FROM messages WHERE inbox_id = ? AND deleted_at IS NULL`)
	} else {
		// Few matches: drive the query from them (the unary + keeps the
		// planner off the inbox index, which would walk the whole inbox).
		b.WriteString(`SELECT ` + messageColumnsSQL + ` FROM messages WHERE +inbox_id = ? AND deleted_at IS NULL`)
	}
	if direction != "" {
		b.WriteString(` AND direction = ?`)
		args = append(args, direction)
	}
	if after != nil {
		b.WriteString(` AND (created_at, id) < (?, ?)`)
		args = append(args, after.At, after.ID)
	}
	switch {
	case common:
		// Walk the inbox newest first, checking each message by rowid.
		b.WriteString(` AND EXISTS (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? AND rowid = messages.rowid)`)
		args = append(args, q.match)
	case !q.Empty():
		b.WriteString(` AND rowid IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)`)
		args = append(args, q.match)
	}
	b.WriteString(` ORDER BY created_at DESC, id DESC LIMIT ?`)
	args = append(args, limit)
	return db.queryMessages(ctx, "inbox page", b.String(), args...)
}

// commonTerm reports whether a search matches more than searchProbe
// messages (in any inbox). Few matches are cheapest collected and sorted;
// many are cheapest found by walking the newest rows and checking each.
func (db *DB) commonTerm(ctx context.Context, q Query) (bool, error) {
	var n int
	err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)`,
		q.match, db.searchProbe).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("search: %w", err)
	}
	return n >= db.searchProbe, nil
}

func (db *DB) queryMessages(ctx context.Context, what, query string, args ...any) ([]Message, error) {
	rows, err := db.readQuery(ctx, query, args...)
	return scanAll(rows, err, what, scanMessage)
}

// DeleteMessage soft-deletes a message: it leaves lists and search, its
// body and raw answer not found, and its thread's count drops.
func (db *DB) DeleteMessage(ctx context.Context, inboxID, messageID string) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		var threadID string
		var rowid int64
		err := tx.QueryRowContext(ctx, `UPDATE messages SET deleted_at = ? WHERE id = ? AND inbox_id = ? AND deleted_at IS NULL
			RETURNING thread_id, rowid`, ms(db.now()), messageID, inboxID).Scan(&threadID, &rowid)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("message %s: %w", messageID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("delete message: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE threads SET message_count = message_count - 1 WHERE id = ?`, threadID); err != nil {
			return fmt.Errorf("delete message: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages_fts WHERE rowid = ? AND rowid <= (SELECT indexed_through FROM search_index)`, rowid); err != nil {
			return fmt.Errorf("delete message search row: %w", err)
		}
		return nil
	})
}

// blobChunk is how much of a large blob one query reads when streaming.
const blobChunk = 1 << 20

// streamBlob writes a blob to w inside one read transaction, so a 25 MB
// message is never held in memory whole: first the row's own data (in
// chunks, for blobs stored before migration 6 or held in one row), then its
// chunk rows in order (see migration 0006).
func (db *DB) streamBlob(ctx context.Context, w io.Writer, table, key, chunkTable, chunkKey string, id string) error {
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
	rows, err := tx.QueryContext(ctx, `SELECT data FROM `+chunkTable+` WHERE `+chunkKey+` = ? ORDER BY seq`, id)
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
func (db *DB) writeRaw(ctx context.Context, w io.Writer, messageID string, deleted bool) error {
	var trace []byte
	err := db.r.QueryRowContext(ctx, `SELECT r.trace FROM raw_messages r JOIN messages m ON m.id = r.message_id
		WHERE r.message_id = ? AND (m.deleted_at IS NULL OR ?)`, messageID, deleted).Scan(&trace)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err == nil && len(trace) > 0 {
		_, err = w.Write(trace)
	}
	if err != nil {
		return err
	}
	return db.streamBlob(ctx, w, "raw_messages", "message_id", "raw_chunks", "message_id", messageID)
}

// WriteAttachment streams an attachment's decoded bytes to w.
func (db *DB) WriteAttachment(ctx context.Context, w io.Writer, attachmentID string) error {
	err := db.streamBlob(ctx, w, "attachments", "id", "attachment_chunks", "attachment_id", attachmentID)
	if err != nil {
		return fmt.Errorf("attachment %s: %w", attachmentID, err)
	}
	return nil
}
