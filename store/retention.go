package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Retention removes old mail for good (SPEC §13, --retention and
// --max-messages): a pruned message goes with everything that hangs off
// it (raw bytes, bodies, attachments, envelope, deliveries, its
// Message-ID lookup: ON DELETE CASCADE), its search row, and its place in
// its thread's counters; a thread left with no message goes too. Pruning
// runs on the writer between ingests, in small transactions.

// retentionBatch bounds the messages one pruning transaction deletes.
const retentionBatch = 500

// Retention is what PruneMessages removes: messages created before
// Cutoff (zero: none by age) and, per inbox, those beyond its Keep newest
// (0: no bound).
type Retention struct {
	Cutoff time.Time
	Keep   int
}

type pruned struct {
	rowid        int64
	id, threadID string
	counted      bool // not soft-deleted: its thread's message_count holds it
}

// PruneMessages deletes up to limit messages that r removes, oldest first,
// and returns how many it deleted.
func (db *DB) PruneMessages(ctx context.Context, r Retention, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM inboxes ORDER BY id`)
		inboxes, err := scanAll(rows, err, "prune: inboxes", func(r rowScanner) (id string, err error) { return id, r.Scan(&id) })
		if err != nil {
			return err
		}
		var victims []pruned
		scan := func(r rowScanner) (p pruned, err error) { return p, r.Scan(&p.rowid, &p.id, &p.threadID, &p.counted) }
		for _, ib := range inboxes {
			room := limit - len(victims)
			if room <= 0 {
				break
			}
			var found []pruned
			if r.Keep > 0 {
				rows, err := tx.QueryContext(ctx, `SELECT rowid, id, thread_id, deleted_at IS NULL FROM messages WHERE inbox_id = ?
					ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, ib, room, r.Keep)
				if found, err = scanAll(rows, err, "prune: beyond the newest", scan); err != nil {
					return err
				}
			}
			if !r.Cutoff.IsZero() && len(found) < room {
				rows, err := tx.QueryContext(ctx, `SELECT rowid, id, thread_id, deleted_at IS NULL FROM messages
					WHERE inbox_id = ? AND created_at < ? ORDER BY created_at, id LIMIT ?`, ib, ms(r.Cutoff), room)
				old, err := scanAll(rows, err, "prune: old", scan)
				if err != nil {
					return err
				}
				have := map[int64]bool{}
				for _, f := range found {
					have[f.rowid] = true
				}
				for _, o := range old {
					if !have[o.rowid] && len(found) < room {
						found = append(found, o)
					}
				}
			}
			victims = append(victims, found...)
		}
		threads := map[string]int{} // thread → counted messages pruned
		for _, v := range victims {
			// The contentless search table has no foreign key; a row the
			// indexer has not written yet is never written (the message is
			// gone when its pass runs).
			if err := dropSearchRows(ctx, tx, `m.rowid = ?`, v.rowid); err != nil {
				return fmt.Errorf("prune: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE rowid = ?`, v.rowid); err != nil {
				return fmt.Errorf("prune: message: %w", err)
			}
			if _, ok := threads[v.threadID]; !ok {
				threads[v.threadID] = 0
			}
			if v.counted {
				threads[v.threadID]++
			}
		}
		for t, counted := range threads {
			if _, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE id = ? AND NOT EXISTS (SELECT 1 FROM messages WHERE thread_id = ?)`, t, t); err != nil {
				return fmt.Errorf("prune: thread: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE threads SET message_count = message_count - ?,
				has_attachments = EXISTS (SELECT 1 FROM messages m JOIN attachments a ON a.message_id = m.id
					WHERE m.thread_id = threads.id)
				WHERE id = ?`, counted, t); err != nil {
				return fmt.Errorf("prune: thread counters: %w", err)
			}
		}
		n = len(victims)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune messages: %w", err)
	}
	return n, nil
}

// pruneMessages runs message retention, a batch at a time, yielding to
// waiting ingests between batches.
func (db *DB) pruneMessages(ctx context.Context) int {
	if db.retention <= 0 && db.maxMessages <= 0 {
		return 0
	}
	r := Retention{Keep: db.maxMessages}
	if db.retention > 0 {
		r.Cutoff = db.now().Add(-db.retention)
	}
	total := 0
	for {
		n, err := db.PruneMessages(ctx, r, retentionBatch)
		total += n
		if err != nil {
			db.log.Error("message retention", "err", err)
			return total
		}
		if n < retentionBatch || len(db.writeQ) > 0 {
			return total
		}
	}
}
