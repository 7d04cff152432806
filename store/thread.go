package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

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
		common, err := db.commonTerm(ctx, inboxID, q)
		if err != nil {
			return nil, err
		}
		if common {
			// Walk the inbox's threads newest first and keep those with a
			// matching message (the thread's token in the scope column):
			// a common term fills a page after a few.
			b.WriteString(` AND EXISTS (SELECT 1 FROM messages_fts WHERE messages_fts MATCH
				'{scope} : "' || ` + sqlScopeToken("t.id") + ` || '" AND ' || ?)`)
			args = append(args, q.words())
		} else {
			// Few matches: collect their threads, then sort those.
			b.WriteString(` AND t.id IN (SELECT m.thread_id FROM messages_fts f JOIN search_keys k ON k.key = f.rowid
				JOIN messages m ON m.rowid = k.message WHERE messages_fts MATCH ? AND m.deleted_at IS NULL)`)
			args = append(args, q.inInbox(inboxID, ""))
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

// ThreadCounts returns how many threads of an inbox have messages, and how
// many messages they hold (deleted ones are not counted; held deferred mail
// is in no thread yet).
func (db *DB) ThreadCounts(ctx context.Context, inboxID string) (threads, messages int64, err error) {
	err = db.readRow(ctx, `SELECT count(*), coalesce(sum(message_count), 0) FROM threads WHERE inbox_id = ? AND message_count > 0`,
		inboxID).Scan(&threads, &messages)
	if err != nil {
		return 0, 0, fmt.Errorf("thread counts: %w", err)
	}
	return threads, messages, nil
}
