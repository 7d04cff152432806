package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Retention removes old mail for good (SPEC §13, --retention and
// --max-messages), but never a send still being delivered (prunable): a
// pruned message goes with everything that hangs off
// it (contents, attachments, deliveries, its Message-ID aliases: ON
// DELETE CASCADE), its search row, and its place in
// its thread's counters; a thread left with no message goes too.
//
// The writer runs it in rounds (every resolveInterval, and at start): a
// round is planned on a read connection, off the writer (which messages
// of which inbox go: a boundary per inbox), then worked off by the writer
// in slices of at most retentionSlice each, only while no ingest waits —
// messages, then the event log past --event-retention, then the deleted
// entries of the full-text index (merged away: mergeSearchSlice), then the
// index's many segments (compacted into one when due, once the writer has
// had no request for compactQuiet: compactSearchSlice),
// then the pages all these emptied beyond a reserve for the ingests to come
// (incremental vacuum, vacuumReserve). An ingest that arrives during a
// slice waits for that slice alone, never for a whole round.

// retentionSlice bounds the writer time of one pruning transaction; an
// ingest arriving meanwhile waits at most about this long (plus the
// commit) for the writer. Full-text merge steps are the exception: one
// writes at least a whole term (searchindex.go, Compaction).
const retentionSlice = 2 * time.Millisecond

// sliceVictims bounds the messages one slice selects at a time.
const sliceVictims = 64

// Retention is what PruneMessages removes: messages created before
// Cutoff (zero: none by age) and, per inbox, those beyond its Keep newest
// (0: no bound).
type Retention struct {
	Cutoff time.Time
	Keep   int
}

// Pruned is what one retention round removed.
type Pruned struct {
	Messages, Events int
	Merges           int // slices of full-text merge work (mergeSearchSlice)
	Compactions      int // slices of full-text compaction (compactSearchSlice)
	Pages            int // pages given back to the file system
	Took             time.Duration
	// Longest is the round's longest slice: how long an ingest that
	// arrived at its start waited for the writer.
	Longest time.Duration
}

// prunable holds back the messages whose send is still under way: a
// delivery not yet final (queued, deferred, being sent) has a next
// attempt, and pruning its message would drop it (ON DELETE CASCADE), so
// the send would vanish with no failed or bounced. Such a message goes in
// a later round, once every delivery of it is final.
const prunable = `NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = messages.id AND d.next_attempt_at IS NOT NULL)`

// bound is one inbox's part of a retention round: its messages before
// (at, id), in (created_at, id) order, go.
type bound struct {
	inbox string
	at    int64
	id    string
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// bounds returns the boundary of every inbox with a message r removes.
func bounds(ctx context.Context, q querier, r Retention) ([]bound, error) {
	if r.Cutoff.IsZero() && r.Keep <= 0 {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT id FROM inboxes ORDER BY id`)
	inboxes, err := scanAll(rows, err, "prune: inboxes", func(r rowScanner) (id string, err error) { return id, r.Scan(&id) })
	if err != nil {
		return nil, err
	}
	var out []bound
	for _, ib := range inboxes {
		b := bound{inbox: ib}
		if !r.Cutoff.IsZero() {
			b.at = ms(r.Cutoff) // created_at < cutoff (no id is below "")
		}
		if r.Keep > 0 {
			// The Keep-th newest stays; everything before it goes.
			var at int64
			var id string
			err := q.QueryRowContext(ctx, `SELECT created_at, id FROM messages WHERE inbox_id = ?
				ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?`, ib, r.Keep-1).Scan(&at, &id)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return nil, fmt.Errorf("prune: the newest kept: %w", err)
			case at > b.at || at == b.at && id > b.id:
				b.at, b.id = at, id
			}
		}
		if b.at == 0 && b.id == "" {
			continue
		}
		var some bool
		if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE inbox_id = ? AND (created_at, id) < (?, ?) AND `+prunable+`)`,
			b.inbox, b.at, b.id).Scan(&some); err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		if some {
			out = append(out, b)
		}
	}
	return out, nil
}

type pruned struct {
	rowid        int64
	id, threadID string
	counted      bool // not soft-deleted: its thread's message_count holds it
}

// pruneSlice deletes, oldest first, up to limit messages of plan's
// inboxes, stopping early once deadline (when not zero) has passed, and
// returns how many it deleted and the part of plan left.
func pruneSlice(ctx context.Context, tx *sql.Tx, plan []bound, limit int, deadline time.Time) (int, []bound, error) {
	n := 0
	threads := map[string]int{} // thread → counted messages pruned
	scan := func(r rowScanner) (p pruned, err error) { return p, r.Scan(&p.rowid, &p.id, &p.threadID, &p.counted) }
	late := func() bool { return !deadline.IsZero() && time.Now().After(deadline) }
	for len(plan) > 0 && n < limit && !late() {
		b := plan[0]
		want := min(limit-n, sliceVictims)
		rows, err := tx.QueryContext(ctx, `SELECT rowid, id, thread_id, deleted_at IS NULL FROM messages
			WHERE inbox_id = ? AND (created_at, id) < (?, ?) AND `+prunable+` ORDER BY created_at, id LIMIT ?`, b.inbox, b.at, b.id, want)
		victims, err := scanAll(rows, err, "prune: messages", scan)
		if err != nil {
			return 0, nil, err
		}
		done := 0
		for _, v := range victims {
			// The contentless search table has no foreign key; a row the
			// indexer has not written yet is never written (the message is
			// gone when its pass runs).
			if err := dropSearchRows(ctx, tx, `m.rowid = ?`, v.rowid); err != nil {
				return 0, nil, fmt.Errorf("prune: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE rowid = ?`, v.rowid); err != nil {
				return 0, nil, fmt.Errorf("prune: message: %w", err)
			}
			if v.counted {
				threads[v.threadID]++
			} else if _, ok := threads[v.threadID]; !ok {
				threads[v.threadID] = 0
			}
			n, done = n+1, done+1
			if late() {
				break
			}
		}
		if done == len(victims) && len(victims) < want {
			plan = plan[1:] // this inbox is done
		}
	}
	for t, counted := range threads {
		if _, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE id = ? AND NOT EXISTS (SELECT 1 FROM messages WHERE thread_id = ?)`, t, t); err != nil {
			return 0, nil, fmt.Errorf("prune: thread: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE threads SET message_count = message_count - ?,
			has_attachments = EXISTS (SELECT 1 FROM messages m JOIN attachments a ON a.message_id = m.id
				WHERE m.thread_id = threads.id)
			WHERE id = ?`, counted, t); err != nil {
			return 0, nil, fmt.Errorf("prune: thread counters: %w", err)
		}
	}
	return n, plan, nil
}

// PruneMessages deletes up to limit messages that r removes, oldest first,
// in one transaction, and returns how many it deleted.
func (db *DB) PruneMessages(ctx context.Context, r Retention, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		plan, err := bounds(ctx, tx, r)
		if err != nil {
			return err
		}
		n, _, err = pruneSlice(ctx, tx, plan, limit, time.Time{})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune messages: %w", err)
	}
	return n, nil
}

// retains reports whether the writer has retention to run.
func (db *DB) retains() bool {
	return db.retention > 0 || db.maxMessages > 0 || db.eventRetention > 0 || db.autoVacuum
}

// round is a retention round in progress; only the writer touches it.
type round struct {
	plan        []bound   // inboxes with messages left to prune
	eventCutoff time.Time // events created before it go
	events      bool      // events may be left to prune
	merge       bool      // the full-text index may hold deleted entries to merge away
	compact     bool      // the full-text index is to be compacted (searchindex.go)
	compacting  bool      // its compaction has started
	waiting     time.Time // when its first wait for quiet began (roundWait)
	vacuum      bool      // free pages may be left to give back
	eventLimit  int       // events per slice, adapted to retentionSlice
	mergeLimit  int       // pages of merge work per slice, likewise
	pageLimit   int       // pages per incremental vacuum, likewise
	began       time.Time
	done        Pruned
	waiters     []chan Pruned // PruneNow callers answered at its end
}

// planRound plans a round on the read pool, off the writer.
func (db *DB) planRound(ctx context.Context) (*round, error) {
	now := db.now()
	// Every round looks for deleted full-text entries: deletes through the
	// API (a message, an inbox, a clear) leave them too. Finding none costs
	// one transaction that is rolled back.
	r := &round{began: time.Now(), merge: true, eventLimit: 64, mergeLimit: 16, pageLimit: 64}
	ret := Retention{Keep: db.maxMessages}
	if db.retention > 0 {
		ret.Cutoff = now.Add(-db.retention)
	}
	var err error
	if r.plan, err = bounds(ctx, db.r, ret); err != nil {
		return nil, err
	}
	r.compact = db.compactionDue(ctx)
	if db.eventRetention > 0 {
		r.eventCutoff = now.Add(-db.eventRetention)
		if err := db.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM projects p
			WHERE (SELECT created_at FROM events e WHERE e.project_id = p.id ORDER BY seq LIMIT 1) < ?)`,
			ms(r.eventCutoff)).Scan(&r.events); err != nil {
			return nil, fmt.Errorf("plan event retention: %w", err)
		}
	}
	if db.autoVacuum {
		var free, pages int
		if err := db.r.QueryRowContext(ctx, `SELECT (SELECT freelist_count FROM pragma_freelist_count), (SELECT page_count FROM pragma_page_count)`).Scan(&free, &pages); err != nil {
			return nil, fmt.Errorf("plan vacuum: %w", err)
		}
		r.vacuum = free > vacuumReserve(pages)
	}
	return r, nil
}

// adapt doubles or halves a slice's size so that it takes about
// retentionSlice.
func adapt(n *int, took time.Duration, most int) {
	switch {
	case took < retentionSlice/2 && *n < most:
		*n = min(2**n, most)
	case took > retentionSlice && *n > 1:
		*n /= 2
	}
}

// roundWait returns nil when the round in progress may take its next
// slice now, else a channel that fires when it may. A compaction's slices
// wait until the writer has had no request for compactQuiet, and so do
// the merge slices that go on with a compaction an earlier round left
// unfinished (FTS5 carries on with a merge under way before any other).
// A round whose waits began compactPatience ago leaves the rest to a
// later round (steady mail, or mail just over a second apart), so that
// rounds, and the pruning they do, keep coming.
func (db *DB) roundWait() <-chan time.Time {
	r := db.round
	compaction := r.merge && db.compactUnfinished || !r.merge && r.compact // the next slice is compaction work
	wait := db.compactQuiet - time.Since(db.lastRequest)
	if len(r.plan) > 0 || r.events || !compaction || wait <= 0 {
		return nil
	}
	if r.waiting.IsZero() {
		r.waiting = time.Now()
	}
	if time.Since(r.waiting)+wait > db.compactPatience {
		db.compactUnfinished = db.compactUnfinished || r.compacting
		r.merge, r.compact = false, false
		return nil
	}
	return time.After(wait)
}

// retentionStep is one slice of the round in progress, or its end.
func (db *DB) retentionStep(ctx context.Context) {
	r := db.round
	start := time.Now()
	var err error
	switch {
	case len(r.plan) > 0:
		var n int
		err = db.tx(ctx, func(tx *sql.Tx) error {
			var err error
			n, r.plan, err = pruneSlice(ctx, tx, r.plan, 1<<20, start.Add(retentionSlice))
			return err
		})
		r.done.Messages += n
		r.vacuum = r.vacuum || n > 0 && db.autoVacuum
	case r.events:
		var n int
		n, err = db.PruneEvents(ctx, r.eventCutoff, r.eventLimit)
		r.done.Events += n
		r.events = n == r.eventLimit
		r.vacuum = r.vacuum || n > 0 && db.autoVacuum
		adapt(&r.eventLimit, time.Since(start), pruneBatch)
	case r.merge:
		var did bool
		did, err = db.mergeSearchSlice(ctx, r.mergeLimit)
		if r.merge = did; did {
			r.done.Merges++
			r.vacuum = r.vacuum || db.autoVacuum
			adapt(&r.mergeLimit, time.Since(start), mergePages)
		} else if err == nil {
			db.compactUnfinished = false // no merge left under way
		}
	case r.compact:
		if !r.compacting && !db.compactionDue(ctx) {
			r.compact = false // the merge slices changed the index since the plan
			break
		}
		var did bool
		did, err = db.compactSearchSlice(ctx, r.mergeLimit, !r.compacting)
		r.compacting = true
		if r.compact = did; did {
			r.done.Compactions++
			r.vacuum = r.vacuum || db.autoVacuum
			adapt(&r.mergeLimit, time.Since(start), mergePages)
		}
	case r.vacuum:
		var free, pages int
		if err = db.w.QueryRowContext(ctx, `SELECT (SELECT freelist_count FROM pragma_freelist_count), (SELECT page_count FROM pragma_page_count)`).Scan(&free, &pages); err != nil {
			break
		}
		give := free - vacuumReserve(pages)
		if r.vacuum = give > 0; !r.vacuum {
			break
		}
		if _, err = db.w.ExecContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", min(give, r.pageLimit))); err != nil {
			break
		}
		r.done.Pages += min(give, r.pageLimit)
		adapt(&r.pageLimit, time.Since(start), reclaimPages)
	default:
		db.endRound()
		return
	}
	r.done.Longest = max(r.done.Longest, time.Since(start))
	if err != nil {
		db.log.Error("retention", "err", err)
		db.endRound()
	}
}

// endRound ends the round in progress: it says what the round removed and
// answers its PruneNow callers.
func (db *DB) endRound() {
	r := db.round
	db.round = nil
	r.done.Took = time.Since(r.began)
	if r.done != (Pruned{Took: r.done.Took, Longest: r.done.Longest}) {
		db.log.Info("retention", "messages", r.done.Messages, "events", r.done.Events, "search_merges", r.done.Merges, "search_compactions", r.done.Compactions,
			"pages", r.done.Pages, "took", r.done.Took.Round(time.Millisecond), "longest_slice", r.done.Longest.Round(time.Millisecond))
	}
	for _, w := range r.waiters {
		w <- r.done
	}
}

// PruneNow runs a retention round now, as the writer does every
// resolveInterval, and returns what it removed once it has ended.
func (db *DB) PruneNow(ctx context.Context) (Pruned, error) {
	w := make(chan Pruned, 1)
	select {
	case db.pruneNow <- w:
	case <-db.stopped:
		return Pruned{}, ErrClosed
	case <-ctx.Done():
		return Pruned{}, ctx.Err()
	}
	select {
	case p := <-w:
		return p, nil
	case <-db.stopped:
		return Pruned{}, ErrClosed
	case <-ctx.Done():
		return Pruned{}, ctx.Err()
	}
}

// mergePages bounds one slice of full-text merge work (FTS5 leaf pages,
// about 4 KB each).
const mergePages = 1000

// reclaimPages bounds one incremental vacuum (4 KB pages: 8 MB).
const reclaimPages = 2000

// vacuumReserve is how many free pages a file of pages keeps for the
// ingests to come: at a steady state they take what pruning frees, and
// giving those pages back only for ingest to grow the file again would
// move pages (incremental vacuum) and write them to the WAL for nothing.
// What is free beyond it (after a burst, a clear, a lowered bound) is
// given back.
func vacuumReserve(pages int) int { return max(256, pages/8) }
