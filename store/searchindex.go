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
// exist, no later message reuses theirs (DB.lastPK), and forget drops them
// once a pass is past them.
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
const sqlInsertFTS = `INSERT INTO messages_fts (rowid, subject, addresses, body, scope) VALUES (?, ?, ?, ?, ?)`

// sqlInsertSearchKey claims a search key for a message; it changes no row
// when the key is taken (another message of the same millisecond).
const sqlInsertSearchKey = `INSERT INTO search_keys (key, message) VALUES (?, ?) ON CONFLICT DO NOTHING`

// Search keys (migration 0013). A messages_fts rowid is not the message's
// rowid but a key that sorts as the lists do, newest first by created_at:
// created_at in unix ms (its group) times 2^21, plus a slot that only
// makes the key unique within the millisecond. FTS5 then pages the newest
// matches itself (ORDER BY rowid DESC LIMIT n, a cursor being a rowid
// bound) instead of every match being collected and sorted. Slots do not
// follow the ids' order, so a page is cut at a group boundary and sorted
// exactly within its groups (searchMessages).
const (
	slotBits = 21
	slotMask = 1<<slotBits - 1
	// Groups are clamped to what fits in a rowid (the years 1830 to 2109):
	// a created_at outside shares its end's group, which only costs a
	// larger group, never a wrong order.
	maxGroup = 1<<(63-slotBits) - 1
	minGroup = -maxGroup - 1
)

// searchGroup is the group of a created_at in unix ms.
func searchGroup(createdAt int64) int64 { return min(max(createdAt, minGroup), maxGroup) }

// groupKeys are the first and last key of a group.
func groupKeys(g int64) (lo, hi int64) { return g << slotBits, g<<slotBits | slotMask }

// sqlGroup is searchGroup in SQL, of the column col.
func sqlGroup(col string) string {
	return fmt.Sprintf("max(min(%s, %d), %d)", col, int64(maxGroup), int64(minGroup))
}

// sqlSearchKeysOf selects the search keys of the messages m that a WHERE
// clause (appended) picks; dropSearchRows uses it.
var sqlSearchKeysOf = `SELECT k.key FROM messages m JOIN search_keys k
	ON k.key BETWEEN ` + sqlGroup("m.created_at") + ` << ` + fmt.Sprint(slotBits) + ` AND (` + sqlGroup("m.created_at") + ` << ` + fmt.Sprint(slotBits) + `) + ` + fmt.Sprint(slotMask) + `
	AND k.message = m.rowid WHERE `

// dropSearchRows deletes the search rows (and keys) of the messages that
// where (a condition on messages m, with args) picks: for a soft delete,
// before a message is deleted for good, or with its inbox. The
// contentless FTS table has no foreign key, so this must run while the
// messages still exist. A message the indexer has not reached has no key
// and so nothing to delete; its pass skips it, being deleted or gone.
func dropSearchRows(ctx context.Context, tx *sql.Tx, where string, args ...any) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM messages_fts WHERE rowid IN (`+sqlSearchKeysOf+where+`)`, args...); err != nil {
		return fmt.Errorf("delete search rows: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM search_keys WHERE key IN (`+sqlSearchKeysOf+where+`)`, args...); err != nil {
		return fmt.Errorf("delete search keys: %w", err)
	}
	return nil
}

// tombstoneMerge is the share of deleted entries (per cent) at which the
// retention round's merge slices (mergeSearchSlice) rewrite a level of
// the full-text index. The table's own deletemerge is 0 (migration 0016):
// a delete never starts a merge inside the statement, and so never inside
// the ingests waiting behind it.
const tombstoneMerge = 50

// mergeSearchSlice does up to pages pages of FTS5 merge work on a merge
// already under way, a level of four segments or more (what any 'merge'
// takes), or a level whose entries are tombstoneMerge per cent deleted,
// and reports whether it did any. FTS5 picks the last only while
// deletemerge is set, so the slice sets it for its own statement and back
// to 0 before it commits: no other statement ever runs with it.
func (db *DB) mergeSearchSlice(ctx context.Context, pages int) (bool, error) {
	return db.ftsMerge(ctx, pages, tombstoneMerge)
}

// ftsMerge runs FTS5's 'merge' command with pages (negative: put every
// segment on one level first, and merge that) in a transaction of its
// own, with deletemerge at percent (0: left as it is) for that statement
// alone, and reports whether it did any merge work. A command that finds
// nothing to merge rolls back, writing nothing.
func (db *DB) ftsMerge(ctx context.Context, pages, percent int) (bool, error) {
	tx, err := db.w.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return false, fmt.Errorf("merge search index: %w", err)
	}
	defer tx.Rollback() // after Commit, a no-op
	var before, after int64
	if percent > 0 {
		if err := setDeleteMerge(ctx, tx, percent); err != nil {
			return false, fmt.Errorf("merge search index: %w", err)
		}
	}
	if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
		return false, fmt.Errorf("merge search index: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages_fts (messages_fts, rank) VALUES ('merge', ?)`, pages); err != nil {
		return false, fmt.Errorf("merge search index: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
		return false, fmt.Errorf("merge search index: %w", err)
	}
	// FTS5's documented test: the command changed fewer than two rows when
	// it found nothing to merge.
	if after-before < 2 {
		return false, nil
	}
	if percent > 0 {
		if err := setDeleteMerge(ctx, tx, 0); err != nil {
			return false, fmt.Errorf("merge search index: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("merge search index: commit: %w", err)
	}
	return true, nil
}

// Compaction. FTS5 keeps the index as segments, each written by one pass
// and merged with others as they pile up (automerge: four of a size make
// one of the next), so a large index holds up to three segments of every
// size: the 1M-message inbox of bench/REPORT.md has 13. Every term a
// query opens is looked up in every segment, and a thread-list search
// opens one term per thread it tests: on that inbox the lookups were half
// of a two-word search's CPU, and the same index in one segment answers
// it 3× faster. So a retention round, which works only while no ingest
// waits, compacts the whole index into one segment, an incremental
// 'optimize': 'merge' with a negative page count puts every segment on
// one level and starts merging it, positive ones go on with it, a slice
// at a time like the round's other work.
//
// A merge step checks its page budget only between terms, so the step
// that reaches a term of most messages (a scope token every row carries, a
// common word) writes that term's whole doclist at once. In the first
// compaction of that 1M-message inbox (25 s, 6,321 slices) 57 slices took
// over 100 ms and one 1.15 s (1.8 s in another run); an ingest that arrives meanwhile waits that
// long (Pruned.Longest, logged as longest_slice). Automerge in the index
// passes has the same steps while mail flows; here they come once per
// eighth of growth, and only after the writer found nothing waiting.
//
// It does when the index holds at least compactSegments segments, and
// the pages outside its largest are at least 1/compactGrowth of that
// one's: a compaction rewrites the index, and the second condition bounds
// that to compactGrowth+1 times what was added since the last one.
//
// Those long steps are why a compaction also waits for the writer to
// have had no request for compactQuiet: mail that comes in bursts (a CI
// run) has it done between them, and steady mail puts it off until a
// lull rather than meeting a long step now and then. A request that
// arrives mid-compaction waits for one step at most; the next step waits
// for another quiet second. A round that has waited resolveInterval
// leaves the rest to later rounds' merge slices, which wait the same way
// (roundWait); a compaction asks compactionDue again before it starts,
// so one is not begun on what those slices just merged.
const (
	compactSegments = 8
	compactGrowth   = 8
	compactQuiet    = time.Second
)

// compactionDue reports whether the full-text index is due a compaction,
// read from its segment index (one row per run of leaf pages, keyed by
// segment, with the first leaf's page number shifted left by one and a
// flag in the low bit): 16,000 rows and a few milliseconds at 1M
// messages. A segment's highest such page is its size, short of its last
// term's run. A failed read is logged and counts as no: only the
// compaction waits for a round that can read the index.
func (db *DB) compactionDue(ctx context.Context) bool {
	var segments, largest, total int64
	err := db.r.QueryRowContext(ctx, `SELECT count(*), coalesce(max(pages), 0), coalesce(sum(pages), 0)
		FROM (SELECT max(pgno >> 1) AS pages FROM messages_fts_idx GROUP BY segid)`).Scan(&segments, &largest, &total)
	if err != nil {
		db.log.Error("retention", "err", fmt.Errorf("plan search compaction: %w", err))
		return false
	}
	return compactDue(segments, largest, total, int64(db.compactSegments))
}

// compactDue is compactionDue's rule, on segments segments of total
// pages, the largest of them largest: at least min segments, and the
// others' pages at least 1/compactGrowth of the largest's.
func compactDue(segments, largest, total, min int64) bool {
	return segments >= min && (total-largest)*compactGrowth >= largest
}

// compactSearchSlice does up to pages pages of the compaction's merge
// work, starting it first when start is set, and reports whether there
// was any left.
func (db *DB) compactSearchSlice(ctx context.Context, pages int, start bool) (bool, error) {
	if start {
		pages = -pages
	}
	return db.ftsMerge(ctx, pages, 0)
}

func setDeleteMerge(ctx context.Context, tx *sql.Tx, percent int) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO messages_fts (messages_fts, rank) VALUES ('deletemerge', ?)`, percent)
	return err
}

// scopeToken turns an id (a prefix, "_" and a ULID, store/id.go) into the
// one token the tokenizer makes of it.
func scopeToken(id string) string { return strings.ToLower(strings.ReplaceAll(id, "_", "")) }

// scopeCol is a message's scope column: its inbox, thread and direction.
func scopeCol(inboxID, threadID, direction string) string {
	return scopeToken(inboxID) + " " + scopeToken(threadID) + " " + direction
}

// indexSearch runs one pass over the messages with a rowid up to upTo.
// more reports that it stopped at its bounds with such messages left.
func (db *DB) indexSearch(ctx context.Context, upTo int64) (more bool, err error) {
	var gen uint64
	var through int64
	err = db.tx(ctx, func(tx *sql.Tx) error {
		gen = db.sq.commits() // the writer is ours: no commit is under way
		db.wakes = 0          // the search index concerns no worker
		more = false
		if err := tx.QueryRowContext(ctx, `SELECT indexed_through FROM search_index`).Scan(&through); err != nil {
			return fmt.Errorf("search index: %w", err)
		}
		type pending struct {
			rowid, createdAt         int64
			deleted                  bool
			inbox, thread, direction string
		}
		rows, err := tx.QueryContext(ctx, `SELECT rowid, deleted_at IS NOT NULL, created_at, inbox_id, thread_id, direction FROM messages
			WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?`, through, upTo, db.sq.passRows)
		todo, err := scanAll(rows, err, "search index", func(r rowScanner) (p pending, err error) {
			return p, r.Scan(&p.rowid, &p.deleted, &p.createdAt, &p.inbox, &p.thread, &p.direction)
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
			key, err := db.claimSearchKey(ctx, tx, p.rowid, p.createdAt)
			if err != nil {
				return err
			}
			scope := scopeCol(p.inbox, p.thread, p.direction)
			if _, err := tx.StmtContext(ctx, db.ws.insertFTS).ExecContext(ctx, key, cols[0], cols[1], cols[2], scope); err != nil {
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

// claimSearchKey stores a search key for the message rowid created at
// createdAt and returns it: the slot is the rowid's low bits, or the next
// free one of the group when another message has it.
func (db *DB) claimSearchKey(ctx context.Context, tx *sql.Tx, rowid, createdAt int64) (int64, error) {
	lo, _ := groupKeys(searchGroup(createdAt))
	for i := range int64(slotMask + 1) {
		key := lo | (rowid+i)&slotMask
		res, err := tx.StmtContext(ctx, db.ws.insertSearchKey).ExecContext(ctx, key, rowid)
		if err != nil {
			return 0, fmt.Errorf("search key: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, fmt.Errorf("search key: %w", err)
		} else if n == 1 {
			return key, nil
		}
	}
	return 0, fmt.Errorf("search key: more than %d messages stored in the millisecond %d", slotMask+1, createdAt)
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

// rebuildAbove is the backlog past which Open indexes before it returns
// instead of leaving it to Run: after migration 0013 (every message), not
// after a restart (at most what was queued in memory). A variable for the
// migration test.
var rebuildAbove int64 = 20000

// rebuildSearch indexes a large backlog in Open, so that the server takes
// no traffic (and no search waits minutes) until it is done, and logs its
// progress.
func (db *DB) rebuildSearch(ctx context.Context) error {
	var through, upTo int64
	if err := db.w.QueryRowContext(ctx, `SELECT indexed_through, (SELECT coalesce(max(rowid), 0) FROM messages) FROM search_index`).
		Scan(&through, &upTo); err != nil {
		return fmt.Errorf("search index: %w", err)
	}
	if upTo-through <= rebuildAbove {
		return nil
	}
	start := time.Now()
	db.log.Warn("search index: rebuilding before serving; the server takes no traffic until done", "messages_up_to_rowid", upTo, "from_rowid", through)
	last := start
	for {
		more, err := db.indexSearch(ctx, math.MaxInt64)
		if err != nil {
			return fmt.Errorf("search index rebuild: %w", err)
		}
		if !more {
			break
		}
		if time.Since(last) >= 5*time.Second {
			last = time.Now()
			var at int64
			if err := db.w.QueryRowContext(ctx, `SELECT indexed_through FROM search_index`).Scan(&at); err == nil {
				db.log.Warn("search index: rebuilding", "done_pct", fmt.Sprintf("%.1f", 100*float64(at-through)/float64(upTo-through)),
					"elapsed", time.Since(start).Round(time.Second))
			}
		}
	}
	// A rebuild leaves a segment per pass, merged only in part: merged
	// into one, every search term is one lookup instead of one per segment.
	db.log.Warn("search index: merging", "elapsed", time.Since(start).Round(time.Second))
	if _, err := db.w.ExecContext(ctx, `INSERT INTO messages_fts (messages_fts) VALUES ('optimize')`); err != nil {
		return fmt.Errorf("search index merge: %w", err)
	}
	db.log.Warn("search index: rebuilt", "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
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
	err := tx.QueryRowContext(ctx, `SELECT m.subject, m.from_json, m.to_json, m.cc_json, c.body
		FROM messages m LEFT JOIN contents c ON c.message = m.pk WHERE m.pk = ?`, rowid).
		Scan(&subject, &from, &to, &cc, &packed)
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
