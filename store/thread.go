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
	if q.Empty() {
		return db.threadsAfter(ctx, db.r, inboxID, after, limit, "", nil)
	}
	if q.none {
		return nil, nil
	}
	if err := db.awaitSearch(ctx); err != nil {
		return nil, err
	}
	common, err := db.commonTerm(ctx, inboxID, q)
	if err != nil {
		return nil, err
	}
	if common {
		return db.walkThreads(ctx, inboxID, q, after, limit)
	}
	// Few matches: collect their threads, then sort those.
	return db.threadsAfter(ctx, db.r, inboxID, after, limit, ` AND t.id IN (SELECT m.thread_id FROM messages_fts f
		JOIN search_keys k ON k.key = f.rowid JOIN messages m ON m.rowid = k.message
		WHERE messages_fts MATCH ? AND m.deleted_at IS NULL)`, q.inInbox(inboxID, ""))
}

// threadsAfter is a page of an inbox's threads in list order, strictly
// after the position after, that also meet cond (with its argument) when
// it is set.
func (db *DB) threadsAfter(ctx context.Context, r queryer, inboxID string, after *TimeKey, limit int, cond string, condArg any) ([]Thread, error) {
	var b strings.Builder
	args := []any{inboxID}
	b.WriteString(`SELECT ` + threadColumns + ` FROM threads t WHERE t.inbox_id = ? AND t.message_count > 0`)
	if after != nil {
		b.WriteString(` AND (t.last_message_at, t.id) < (?, ?)`)
		args = append(args, after.At, after.ID)
	}
	if cond != "" {
		b.WriteString(cond)
		args = append(args, condArg)
	}
	b.WriteString(` ORDER BY t.last_message_at DESC, t.id DESC LIMIT ?`)
	rows, err := r.QueryContext(ctx, b.String(), append(args, limit)...)
	return scanAll(rows, err, "list threads", scanThread)
}

// walkBatchMin is the fewest threads walkThreads tests at a time (tests
// lower it to walk in many batches).
var walkBatchMin = 16

// walkThreads is ListThreads for a common term: it walks the inbox's
// threads newest first and keeps those with a matching message (the
// thread's token in the scope column): a page fills after a few. The
// threads are tested a page at a time, with one full-text query for the
// batch ('{scope} : ("t1" OR "t2" …) AND words'), not one per thread: the
// query's own cost was most of a thread's test. One read transaction: the
// batches see one snapshot.
func (db *DB) walkThreads(ctx context.Context, inboxID string, q Query, after *TimeKey, limit int) ([]Thread, error) {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	defer tx.Rollback()
	batch := max(limit, walkBatchMin) // a common term matches most threads
	var out []Thread
	for len(out) < limit {
		threads, err := db.threadsAfter(ctx, tx, inboxID, after, batch, "", nil)
		if err != nil || len(threads) == 0 {
			return out, err
		}
		tokens := make([]string, len(threads))
		for i, t := range threads {
			tokens[i] = `"` + scopeToken(t.ID) + `"`
		}
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT m.thread_id FROM messages_fts f JOIN search_keys k ON k.key = f.rowid
			JOIN messages m ON m.rowid = k.message WHERE messages_fts MATCH ?`,
			`{scope} : (`+strings.Join(tokens, " OR ")+`) AND `+q.words())
		hits, err := scanAll(rows, err, "list threads", func(r rowScanner) (id string, err error) { return id, r.Scan(&id) })
		if err != nil {
			return nil, err
		}
		matched := make(map[string]bool, len(hits))
		for _, id := range hits {
			matched[id] = true
		}
		for _, t := range threads {
			if len(out) < limit && matched[t.ID] {
				out = append(out, t)
			}
		}
		if len(threads) < batch {
			break
		}
		last := threads[len(threads)-1]
		after = &TimeKey{At: last.LastMessageAt.UnixMilli(), ID: last.ID}
	}
	return out, nil
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
