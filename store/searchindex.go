package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/inboxd/inboxd/message"
)

// The search indexer. A message's messages_fts row is not written in the
// transaction that stores the message but after it, by indexing passes
// over everything stored since the last one. FTS5 writes a segment per
// transaction and merges segments as they pile up: written with every
// ingest batch of two or three messages, the flushing and merging (and the
// tokenizing, 13% of the CPU at 64 KB) held up every acknowledgement.
// A pass of a few hundred messages writes one segment.
//
// Nothing is lost in a crash: search_index.indexed_through (migration
// 0008) marks how far the index is complete, by messages.rowid, and a
// pass indexes the messages above it. Their texts are usually still in
// memory from the ingest (searchQueue); after a restart, or past the
// memory bound, a pass rebuilds them from the stored message.
//
// Searches never see a stale index: before a full-text query, awaitSearch
// runs a pass itself when anything committed is not indexed yet.

const (
	// indexDelay is how long committed messages may wait for a pass when
	// fewer than a pass are pending and nobody searches.
	indexDelay = 200 * time.Millisecond
	// queueBytes bounds the texts kept in memory for the next pass.
	queueBytes = 16 << 20
)

// searchQueue holds the search rows of committed messages until a pass
// writes them.
type searchQueue struct {
	// passRows and passBytes bound one pass: how long it holds the writer
	// (and delays acknowledgements) and how large its segment is.
	passRows, passBytes int

	mu    sync.Mutex
	texts map[int64][3]string // by messages.rowid
	bytes int
	// committed counts the commits that stored messages; indexed is the
	// value of committed that the last complete pass started from.
	committed, indexed uint64
}

func newSearchQueue(passRows, passBytes int) searchQueue {
	return searchQueue{passRows: passRows, passBytes: passBytes, texts: map[int64][3]string{}}
}

func rowBytes(cols [3]string) int { return len(cols[0]) + len(cols[1]) + len(cols[2]) }

// queue records the search rows of the transaction about to commit. It
// runs while the caller still holds the writer, so no pass can start
// between the commit and this bookkeeping. Rows of a transaction that then
// fails to commit stay behind harmlessly: a pass only indexes rowids that
// exist, and a later message reusing a rowid replaces its entry.
func (q *searchQueue) queue(rows []searchRow) {
	if len(rows) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range rows {
		if old, ok := q.texts[r.rowid]; ok {
			q.bytes -= rowBytes(old)
			delete(q.texts, r.rowid)
		}
		if n := rowBytes(r.cols); q.bytes+n <= queueBytes {
			q.texts[r.rowid] = r.cols
			q.bytes += n
		}
	}
	q.committed++
}

// pending reports whether something committed may not be indexed yet.
func (q *searchQueue) pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.indexed < q.committed
}

// backlogged reports whether a full pass is waiting: Run then indexes
// after each ingest batch, so that passes keep up with heavy ingest.
func (q *searchQueue) backlogged() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.texts) >= q.passRows || q.bytes >= q.passBytes
}

// take removes and returns the queued row of rowid.
func (q *searchQueue) take(rowid int64) ([3]string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	cols, ok := q.texts[rowid]
	if ok {
		q.bytes -= rowBytes(cols)
		delete(q.texts, rowid)
	}
	return cols, ok
}

// forget drops the queued rows at or below rowid: deleted before a pass
// reached them, or rows of a transaction that did not commit.
func (q *searchQueue) forget(through int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for id, cols := range q.texts {
		if id <= through {
			q.bytes -= rowBytes(cols)
			delete(q.texts, id)
		}
	}
}

func (q *searchQueue) commits() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.committed
}

func (q *searchQueue) completed(gen uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.indexed = max(q.indexed, gen)
}

// errNothingToIndex rolls back a pass that found nothing: no commit, so
// long-polls are not woken for it.
var errNothingToIndex = errors.New("nothing to index")

// sqlInsertFTS writes one message's search row, for every message a pass
// indexes (prepared: writeStmts).
const sqlInsertFTS = `INSERT INTO messages_fts (rowid, subject, addresses, body) VALUES (?, ?, ?, ?)`

// indexSearch runs one pass over the messages with a rowid up to upTo.
// more reports that it stopped at its bounds with such messages left.
func (db *DB) indexSearch(ctx context.Context, upTo int64) (more bool, err error) {
	var gen uint64
	var through int64
	err = db.tx(ctx, func(tx *sql.Tx) error {
		gen = db.sq.commits() // the writer is ours: no commit is under way
		more = false
		if err := tx.QueryRowContext(ctx, `SELECT indexed_through FROM search_index`).Scan(&through); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		type pending struct {
			rowid   int64
			deleted bool
		}
		rows, err := tx.QueryContext(ctx, `SELECT rowid, deleted_at IS NOT NULL FROM messages
			WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?`, through, upTo, db.sq.passRows)
		todo, err := scanAll(rows, err, "search index", func(r rowScanner) (p pending, err error) {
			return p, r.Scan(&p.rowid, &p.deleted)
		})
		if err != nil {
			return err
		}
		if len(todo) == 0 {
			return errNothingToIndex
		}
		more = len(todo) == db.sq.passRows
		size := 0
		for i, p := range todo {
			if size >= db.sq.passBytes {
				more = true
				todo = todo[:i]
				break
			}
			cols, ok := db.sq.take(p.rowid)
			if p.deleted {
				continue
			}
			if !ok {
				if cols, err = db.storedSearchRow(ctx, tx, p.rowid); err != nil {
					return err
				}
			}
			size += rowBytes(cols)
			if _, err := tx.StmtContext(ctx, db.ws.insertFTS).ExecContext(ctx, p.rowid, cols[0], cols[1], cols[2]); err != nil {
				return fmt.Errorf("index message: %w", err)
			}
		}
		through = todo[len(todo)-1].rowid
		_, err = tx.ExecContext(ctx, `UPDATE search_index SET indexed_through = ?`, through)
		return err
	})
	if err != nil && !errors.Is(err, errNothingToIndex) {
		return false, err
	}
	db.sq.forget(through)
	if !more && upTo == math.MaxInt64 {
		db.sq.completed(gen)
	}
	return more, nil
}

// awaitSearch makes everything committed before it was called searchable.
// It indexes up to the highest rowid at the time of the call, so it ends
// even while ingest goes on adding messages faster than a pass takes them.
func (db *DB) awaitSearch(ctx context.Context) error {
	if !db.sq.pending() {
		return nil // no commit with search rows since the last complete pass
	}
	var upTo int64
	if err := db.r.QueryRowContext(ctx, `SELECT coalesce(max(rowid), 0) FROM messages`).Scan(&upTo); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		more, err := db.indexSearch(ctx, upTo)
		if err != nil || !more {
			return err
		}
	}
}

// indexInBackground runs one pass for Run and reports whether messages
// are left. A failed pass is logged; Run's next tick tries again.
func (db *DB) indexInBackground(ctx context.Context) (more bool) {
	more, err := db.indexSearch(ctx, math.MaxInt64)
	if err != nil {
		db.log.Error("search index", "err", err)
		return false
	}
	return more
}

// storedSearchRow rebuilds a message's search row from what is stored, as
// searchCols built it at ingest. A part that cannot be decoded is left out
// (and logged): one damaged row must not stop the index.
func (db *DB) storedSearchRow(ctx context.Context, tx *sql.Tx, rowid int64) ([3]string, error) {
	var subject, to, cc string
	var from sql.NullString
	var b Body
	var packed []byte
	err := tx.QueryRowContext(ctx, `SELECT m.subject, m.from_json, m.to_json, m.cc_json, b.text, b.html, b.packed
		FROM messages m LEFT JOIN bodies b ON b.message_id = m.id WHERE m.rowid = ?`, rowid).
		Scan(&subject, &from, &to, &cc, &b.Text, &b.HTML, &packed)
	if err != nil {
		return [3]string{}, fmt.Errorf("search row of message %d: %w", rowid, err)
	}
	damaged := func(what string, err error) {
		db.log.Error("search index: message indexed without its "+what, "rowid", rowid, "err", err)
	}
	if packed != nil {
		if b, err = db.bodies.unpack(packed); err != nil {
			damaged("body", err)
		}
	}
	var addrs []message.Address
	var toAddrs, ccAddrs []Address
	if err := errors.Join(decodeAddresses(to, &toAddrs), decodeAddresses(cc, &ccAddrs)); err != nil {
		damaged("To and Cc", err)
	}
	for _, a := range append(toAddrs, ccAddrs...) {
		addrs = append(addrs, message.Address{Email: a.Email, Name: deref(a.Name)})
	}
	var fromMsg *message.Address
	if from.Valid {
		var a Address
		if err := decodeAddress(from.String, &a); err != nil {
			damaged("From", err)
		} else {
			fromMsg = &message.Address{Email: a.Email, Name: deref(a.Name)}
		}
	}
	return searchCols(subject, addrs, fromMsg, deref(b.Text), b.Text != nil, deref(b.HTML)), nil
}

// searchCols is a message's messages_fts row: its subject, the names and
// addresses of To and Cc, then From, and its text (extracted from the HTML
// when there is no text part). Ingest and the rebuild after a restart both
// build rows here, so the two agree.
func searchCols(subject string, toCc []message.Address, from *message.Address, text string, hasText bool, html string) [3]string {
	body := text
	if !hasText {
		body = message.HTMLToText(html)
	}
	var addrs []string
	for _, a := range toCc {
		addrs = append(addrs, a.Name, a.Email)
	}
	if from != nil {
		addrs = append(addrs, from.Name, from.Email)
	}
	return [3]string{message.SearchText(subject), message.SearchText(strings.Join(addrs, " ")), message.SearchText(body)}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
