package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/bits"
	"time"
)

// writeReq is one request of a group commit: an ingest or a send. The
// writer (Run) stores each request of a batch under its own savepoint and
// answers them all once the batch has committed.
type writeReq struct {
	// ctx, when set, is the caller's: a request whose caller gave up
	// before the writer reached it is not stored.
	ctx   context.Context
	size  int64 // raw bytes, counted against maxBatchBytes
	store func(ctx context.Context, tx *sql.Tx) error
	// release, when set, runs once the batch is over, committed or not.
	release func()
	done    chan error // buffered: the writer never waits for the caller
	// probe asks only whether the writer takes the write lock (Ready); it
	// stores nothing.
	probe bool
	// marksWakes: store adds to db.wakes what it changes for the workers,
	// so a batch of such requests wakes only those (see wakeSet). A
	// request without it wakes all.
	marksWakes bool
}

// Ready reports whether the database is writable right now: the writer
// goroutine answers and takes SQLite's write lock (BEGIN IMMEDIATE, then
// ROLLBACK, so nothing is written and no waiter wakes). It is /readyz's
// check; a writer stuck or stopped, or another process holding the lock
// past the busy timeout, fails it.
func (db *DB) Ready(ctx context.Context) error {
	req := &writeReq{ctx: ctx, probe: true, done: make(chan error, 1),
		store: func(context.Context, *sql.Tx) error { return nil }} // in a batch, its BEGIN proves the lock
	if err := db.enqueue(ctx, req); err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	select {
	case err := <-req.done:
		if err != nil {
			return fmt.Errorf("ready: %w", err)
		}
		return nil
	case <-db.stopped:
		return fmt.Errorf("ready: %w", ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("ready: %w", ctx.Err())
	}
}

// probeWrite takes the write lock and lets it go.
func (db *DB) probeWrite(ctx context.Context) error {
	tx, err := db.w.BeginTx(ctx, nil) // _txlock=immediate: BEGIN IMMEDIATE
	if err != nil {
		return err
	}
	return tx.Rollback()
}

// enqueue hands req to the writer; once the writer has stopped, the
// queue's buffer would take req and nobody would answer it.
func (db *DB) enqueue(ctx context.Context, req *writeReq) error {
	select {
	case <-db.stopped:
		return ErrClosed
	default:
	}
	select {
	case db.writeQ <- req:
		return nil
	case <-db.stopped:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run is the writer: it takes every ingest waiting in the queue, commits
// them in one transaction (group commit: one fsync for many messages), and
// only then answers them. It returns when ctx is done, after committing what
// was already queued.
//
// It also retries deferred messages, and runs retention rounds (message
// retention, the event log past its retention, incremental vacuum;
// retention.go): once at start (a restart resumes them) and then
// periodically. A round's slices run only while no request waits.
func (db *DB) Run(ctx context.Context) error {
	defer close(db.stopped)
	bg := context.WithoutCancel(ctx)
	planning := false
	var asked []chan Pruned // PruneNow callers waiting for the next round
	// plan starts planning a round: a due one (every resolveInterval), or
	// one PruneNow asked for.
	plan := func(due bool) {
		if planning || db.round != nil || !(due && db.retains() || len(asked) > 0) {
			return
		}
		planning = true
		waiters := asked
		asked = nil
		go func() {
			r, err := db.planRound(bg)
			db.planned <- planned{r, err, waiters}
		}()
	}
	begin := func(p planned) {
		planning = false
		if p.err != nil {
			db.log.Error("retention", "err", p.err)
			p.r = &round{began: time.Now()}
		}
		p.r.waiters = p.waiters
		db.round = p.r // nothing to do: its first step ends it
	}
	resolve := func() {
		if _, err := db.ResolveDeferred(bg, ""); err != nil {
			db.log.Error("resolve deferred messages", "err", err)
		}
		plan(true)
	}
	index := func() {
		db.noticeOtherWriters(bg) // on the same beat, for the recipient cache
		// Committed messages wait at most indexDelay for a pass; a
		// backlog (after a restart) is worked off while no ingest waits.
		for more := db.sq.pending(); more && len(db.writeQ) == 0; {
			more = db.indexInBackground(bg)
		}
	}
	drain := func() {
		// What was queued before the stop is committed.
		for {
			select {
			case req := <-db.writeQ:
				db.commitBatch(bg, req)
			default:
				if planning {
					<-db.planned // the planner's reads end before the pools close
				}
				return
			}
		}
	}
	resolve()
	tick := time.NewTicker(resolveInterval)
	defer tick.Stop()
	indexTick := time.NewTicker(indexDelay)
	defer indexTick.Stop()
	for {
		var quiet <-chan time.Time // fires when a waiting round may go on
		if db.round != nil && len(db.writeQ) == 0 {
			if quiet = db.roundWait(); quiet == nil {
				// A round in progress: a slice of it, unless something else is due.
				select {
				case <-tick.C:
					resolve()
				case <-indexTick.C:
					index()
				case w := <-db.pruneNow:
					asked = append(asked, w)
				case <-ctx.Done():
					drain()
					return nil
				default:
					db.retentionStep(bg)
					if db.round == nil {
						plan(false) // the round PruneNow asked for meanwhile
					}
				}
				continue
			}
		}
		var first *writeReq // a request, else a tick or the round's quiet
		select {
		case <-quiet:
			continue
		case <-tick.C:
			resolve()
			continue
		case <-indexTick.C:
			index()
			continue
		case w := <-db.pruneNow:
			asked = append(asked, w)
			plan(false)
			continue
		case p := <-db.planned:
			begin(p)
			continue
		case first = <-db.writeQ:
			if first.probe {
				first.done <- db.probeWrite(bg)
				continue
			}
		case <-ctx.Done():
			drain()
			return nil
		}
		db.commitBatch(bg, first)
		db.lastRequest = time.Now()
		if db.sq.backlogged() {
			db.indexInBackground(bg)
		}
	}
}

// planned is a round planned off the writer, with the PruneNow callers it
// answers.
type planned struct {
	r       *round
	err     error
	waiters []chan Pruned
}

// maxBatchBytes bounds the raw bytes of one group commit, so a batch of
// large messages does not hold the write lock (and memory) too long.
const maxBatchBytes = 32 << 20

// maxBatchExtend bounds how long a batch goes on taking requests that
// queued while it ran, so that its first request's answer is not put off
// by a steady stream behind it.
const maxBatchExtend = 5 * time.Millisecond

// takeBatch adds to batch what waits in the queue, up to maxBatch requests
// and maxBatchBytes.
func (db *DB) takeBatch(batch []*writeReq) []*writeReq {
	var size int64
	for _, req := range batch {
		size += req.size
	}
	for len(batch) < db.maxBatch && size < maxBatchBytes {
		select {
		case req := <-db.writeQ:
			batch = append(batch, req)
			size += req.size
		default:
			return batch
		}
	}
	return batch
}

// commitBatch is one group commit: first and what is queued once the
// writer connection is ours (requests that queued while another
// transaction held it join), and then what queued while their statements
// ran, until nothing waits, the batch is full (maxBatch, maxBatchBytes) or
// it has run for batchExtend: a request that arrives mid-batch would
// otherwise wait for this commit and then for its own. It stores each
// request under its own savepoint, so one failing request does not fail
// the others, then commits once and answers them. The full-text rows are
// left to the search indexer (indexLater, searchindex.go).
func (db *DB) commitBatch(ctx context.Context, first *writeReq) {
	var batch []*writeReq
	var errs []error
	start := time.Now()
	err := db.tx(ctx, func(tx *sql.Tx) error {
		batch = db.takeBatch([]*writeReq{first})
		db.wakes = 0
		for i := 0; i < len(batch); i++ {
			req := batch[i]
			if !req.marksWakes {
				db.wakes = wakeAll
			}
			if req.ctx != nil && req.ctx.Err() != nil {
				errs = append(errs, req.ctx.Err())
			} else {
				fnErr, err := db.underSavepoint(ctx, tx, func() error { return req.store(ctx, tx) })
				if err != nil {
					return err
				}
				errs = append(errs, fnErr)
			}
			if i == len(batch)-1 && time.Since(start) < db.batchExtend {
				batch = db.takeBatch(batch)
			}
		}
		if db.failNext != nil {
			return db.failNext()
		}
		return nil
	})
	if batch == nil { // the transaction did not begin
		batch = []*writeReq{first}
	}
	errs = append(errs, make([]error, len(batch)-len(errs))...) // the requests a failed batch did not reach
	if err == nil && db.onBatch != nil {
		db.onBatch(len(batch), time.Since(start))
	}
	for i, req := range batch {
		if req.release != nil {
			req.release()
		}
		if err != nil {
			errs[i] = fmt.Errorf("commit batch: %w", err)
		}
		req.done <- errs[i]
	}
}

// tx runs fn in a write transaction on the writer connection, hands the
// search rows fn left pending (see indexLater) to the search indexer and
// commits.
//
// The transaction is begun without ctx's cancellation: database/sql rolls a
// cancelled transaction back and hands the connection to the next caller
// while fn may still run, and fn's pending search rows (db.search) belong
// to whoever holds the connection. A cancelled ctx still stops fn's
// statements, and fn's error rolls the transaction back here. A panic in fn
// rolls back too, so the writer is never left inside a transaction.
func (db *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.w.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() // after Commit, a no-op
	if err := ctx.Err(); err != nil {
		return err
	}
	db.search = db.search[:0]
	db.wakes = wakeAll // unless fn knows better (commitBatch)
	err = fn(tx)
	if err == nil {
		db.sq.queue(db.search)
	}
	clear(db.search) // the texts are not kept until the next transaction
	// Read before the commit lets the next transaction begin (an index
	// pass from a search, say) and set them for itself.
	inboxes, wakes := db.inboxesChanged, db.wakes
	db.inboxesChanged = false
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if inboxes {
		db.recipients.gen.Add(1)
	}
	db.changeMu.Lock()
	for i, ch := range db.changed {
		if (wakes|wakeCommit)&(1<<i) != 0 {
			close(ch)
			db.changed[i] = make(chan struct{})
		}
	}
	db.changeMu.Unlock()
	return nil
}

// wakeSet names the workers' queues a transaction may have changed, so
// that its commit wakes only the workers it concerns: under load an ingest
// batch commits hundreds of times a second, and each wake-up costs a
// worker a query (3 % of the process at 4 KB). Every transaction wakes
// all of them unless it says otherwise; only commitBatch does, for the
// requests that mark what they change (writeReq.marksWakes). A commit
// closes DB.changed[i] for each bit i of its set.
type wakeSet uint8

const (
	wakeCommit   wakeSet = 1 << iota // every commit (Changed): tx adds it
	wakeOutbound                     // the deliveries table
	wakeWebhooks                     // webhook deliveries and endpoints
	wakeKinds    = iota

	wakeAll = wakeOutbound | wakeWebhooks
)

// The statements of underSavepoint, prepared once (writeStmts): one group
// commit runs them for every message.
const (
	sqlSavepoint           = `SAVEPOINT one`
	sqlRollbackToSavepoint = `ROLLBACK TO one`
	sqlReleaseSavepoint    = `RELEASE one`
)

// underSavepoint runs fn under a savepoint of tx: when fn fails, what it
// wrote (its pending search rows too) is undone and the transaction goes
// on, so one request of a group commit fails alone. It returns fn's error,
// and err when the savepoint itself failed (the transaction must abort).
func (db *DB) underSavepoint(ctx context.Context, tx *sql.Tx, fn func() error) (fnErr, err error) {
	if _, err := tx.StmtContext(ctx, db.ws.savepoint).ExecContext(ctx); err != nil {
		return nil, err
	}
	mark := len(db.search)
	if fnErr = fn(); fnErr != nil {
		db.search = db.search[:mark]
		if _, err := tx.StmtContext(ctx, db.ws.rollbackToSavepoint).ExecContext(ctx); err != nil {
			return fnErr, err
		}
	}
	if _, err := tx.StmtContext(ctx, db.ws.releaseSavepoint).ExecContext(ctx); err != nil {
		return fnErr, err
	}
	return fnErr, nil
}

// Changed returns a channel that is closed by the next commit. Long-polls
// take it, query, and wait on it only if the query found nothing: waiters
// are woken by commits, never by polling.
func (db *DB) Changed() <-chan struct{} { return db.changes(wakeCommit) }

// OutboundChanged is Changed for the outbound worker: closed by the next
// commit that may have changed the deliveries table.
func (db *DB) OutboundChanged() <-chan struct{} { return db.changes(wakeOutbound) }

// WebhooksChanged is Changed for the webhook worker: closed by the next
// commit that may have changed webhook deliveries or endpoints.
func (db *DB) WebhooksChanged() <-chan struct{} { return db.changes(wakeWebhooks) }

// changes returns the channel the next commit that wakes kind (one bit)
// closes.
func (db *DB) changes(kind wakeSet) <-chan struct{} {
	db.changeMu.Lock()
	defer db.changeMu.Unlock()
	return db.changed[bits.TrailingZeros8(uint8(kind))]
}
