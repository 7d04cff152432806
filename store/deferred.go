package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/inboxd/inboxd/message"
)

// DeferWindow is how long an inbound message may wait for an unconfirmed
// outbound Message-ID before it is stored regardless (SPEC §4).
const DeferWindow = 10 * time.Minute

// resolveInterval is how often the writer retries deferred messages when
// nothing else wakes it.
const resolveInterval = 15 * time.Second

// hasUnconfirmedOutbound reports whether the inbox has an outbound message,
// created within the window, whose final Message-ID is not confirmed and
// still may be: a send the relay refused for every recipient (bounced,
// failed) will never get its 250, and holds nothing. Run for every
// ingest, so prepared (writeStmts).
const (
	sqlUnconfirmedOutbound = `SELECT count(*) FROM messages
		WHERE inbox_id = ? AND direction = 'outbound' AND message_id_confirmed = 0 AND created_at > ?
			AND state NOT IN ('bounced', 'failed')`
	sqlDeferredDuplicate = `SELECT count(*) FROM deferred_messages WHERE inbox_id = ? AND raw_sha256 = ?`
)

func (db *DB) hasUnconfirmedOutbound(ctx context.Context, tx *sql.Tx, inboxID string) (bool, error) {
	var n int
	err := tx.StmtContext(ctx, db.ws.unconfirmedOutbound).QueryRowContext(ctx, inboxID, ms(db.now().Add(-DeferWindow))).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("find unconfirmed outbound: %w", err)
	}
	return n > 0, nil
}

// isDeferredDuplicate reports whether the same message already waits in
// the inbox's deferred queue (an SMTP retry of a deferred message). The
// rule is that of stored messages (SPEC §4): same own id and same bytes.
// Equal bytes carry the same Message-ID header, so the digest decides; a
// message without one has a generated id of its own and is never a
// duplicate.
func (db *DB) isDeferredDuplicate(ctx context.Context, tx *sql.Tx, p *prepared, inboxID string) (bool, error) {
	if p.generated || db.storeDuplicates || !db.deferredMayExist.Load() {
		return false, nil
	}
	var n int
	err := tx.StmtContext(ctx, db.ws.deferredDuplicate).QueryRowContext(ctx, inboxID, p.hash).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("find deferred duplicate: %w", err)
	}
	return n > 0, nil
}

func (db *DB) deferMessage(ctx context.Context, tx *sql.Tx, p *prepared, inboxID, tag string) error {
	env, err := json.Marshal(p.in.Envelope)
	if err != nil {
		return fmt.Errorf("encode envelope: %w", err)
	}
	raw := p.in.Raw
	if p.in.Large != nil {
		// Rare (a large reply to an unconfirmed relay send): it waits, and
		// is parsed again later, in memory.
		if raw, err = io.ReadAll(p.in.Large.Reader()); err != nil {
			return fmt.Errorf("defer message: %w", err)
		}
	}
	db.deferredMayExist.Store(true) // before the row: a rollback leaves it merely set
	_, err = tx.ExecContext(ctx, `INSERT INTO deferred_messages (inbox_id, address_tag, raw_sha256, raw, trace, envelope, simulated, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		inboxID, nullIfEmpty(tag), p.hash, raw, append([]byte{}, p.in.Trace...), string(env), p.in.Simulated, ms(p.in.ReceivedAt))
	if err != nil {
		return fmt.Errorf("defer message: %w", err)
	}
	return nil
}

// ResolveDeferred tries every deferred message again (of one inbox, or of
// all when inboxID is ""): a message whose parent now resolves, whose inbox
// has no unconfirmed send left, or that is DeferWindow old is stored; the
// others keep waiting. It returns what was stored.
func (db *DB) ResolveDeferred(ctx context.Context, inboxID string) ([]Delivered, error) {
	var out []Delivered
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = db.resolveDeferredTx(ctx, tx, inboxID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resolve deferred: %w", err)
	}
	return out, nil
}

type deferredRow struct {
	id       int64
	inboxID  string
	tag      sql.NullString
	in       Incoming
	received int64
}

func (db *DB) resolveDeferredTx(ctx context.Context, tx *sql.Tx, inboxID string) ([]Delivered, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, inbox_id, address_tag, raw, trace, envelope, simulated, received_at
		FROM deferred_messages WHERE ? = '' OR inbox_id = ? ORDER BY id`, inboxID, inboxID)
	if err != nil {
		return nil, fmt.Errorf("list deferred: %w", err)
	}
	var pending []deferredRow
	for rows.Next() {
		var r deferredRow
		var env string
		if err := rows.Scan(&r.id, &r.inboxID, &r.tag, &r.in.Raw, &r.in.Trace, &env, &r.in.Simulated, &r.received); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read deferred: %w", err)
		}
		if err := json.Unmarshal([]byte(env), &r.in.Envelope); err != nil {
			rows.Close()
			return nil, fmt.Errorf("decode deferred envelope: %w", err)
		}
		pending = append(pending, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if inboxID == "" && len(pending) == 0 {
		// Nothing deferred, and nothing can be deferred before this
		// transaction ends: the writer is ours.
		db.deferredMayExist.Store(false)
	}

	var out []Delivered
	now := db.now()
	scopes := map[string]eventScope{} // most deferred mail waits in few inboxes
	for _, r := range pending {
		r.in.ReceivedAt = fromMS(r.received)
		r.in.Parsed = message.Parse(r.in.Raw)
		expired := now.Sub(r.in.ReceivedAt) >= DeferWindow
		scope, ok := scopes[r.inboxID]
		if !ok {
			var found bool
			if scope, found, err = db.findEventScope(ctx, tx, r.inboxID); err != nil {
				return nil, err
			}
			if !found { // deleting an inbox deletes its deferred messages
				return nil, fmt.Errorf("deferred message %d: inbox %s: %w", r.id, r.inboxID, sql.ErrNoRows)
			}
			scopes[r.inboxID] = scope
		}
		d, err := db.storeInbound(ctx, tx, db.prepare(&r.in), scope, r.inboxID, r.tag.String, !expired)
		if err != nil {
			return nil, err
		}
		if d.Deferred {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM deferred_messages WHERE id = ?`, r.id); err != nil {
			return nil, fmt.Errorf("drop deferred: %w", err)
		}
		db.log.Info("deferred message stored", "inbox", r.inboxID, "message", d.MessageID, "thread_match", d.Match,
			"waited", now.Sub(r.in.ReceivedAt).Round(time.Millisecond).String())
		if db.onDeferredStored != nil {
			db.onDeferredStored(now.Sub(r.in.ReceivedAt))
		}
		out = append(out, d)
	}
	return out, nil
}

// DeferredCount returns how many inbound messages wait for the deferred
// parent lookup, and the receive time of the oldest.
func (db *DB) DeferredCount(ctx context.Context) (int, time.Time, error) {
	var n int
	var oldest sql.NullInt64
	err := db.r.QueryRowContext(ctx, `SELECT count(*), min(received_at) FROM deferred_messages`).Scan(&n, &oldest)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("count deferred: %w", err)
	}
	if !oldest.Valid {
		return n, time.Time{}, nil
	}
	return n, fromMS(oldest.Int64), nil
}

// ConfirmMessageID records the final Message-ID of an outbound message (an
// alias when a relay rewrote it), marks it confirmed, and at once stores
// the deferred messages of its inbox that now resolve (SPEC §4).
func (db *DB) ConfirmMessageID(ctx context.Context, messageID, finalID string) ([]Delivered, error) {
	var out []Delivered
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var inboxID, own string
		err := tx.QueryRowContext(ctx, `UPDATE messages SET message_id_confirmed = 1 WHERE id = ? AND direction = 'outbound'
			RETURNING inbox_id, rfc_message_id`, messageID).Scan(&inboxID, &own)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("message %s: %w", messageID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if finalID != "" && finalID != own {
			db.aliasesMayExist.Store(true) // before the row: a rollback leaves it merely set
			if _, err := tx.ExecContext(ctx, `INSERT INTO message_aliases (inbox_id, rfc_message_id, message)
				SELECT ?, ?, pk FROM messages WHERE id = ?`, inboxID, finalID, messageID); err != nil {
				return fmt.Errorf("record alias: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM missing_parents WHERE inbox_id = ? AND rfc_message_id = ?`, inboxID, finalID); err != nil {
				return fmt.Errorf("drop missing parent: %w", err)
			}
		}
		out, err = db.resolveDeferredTx(ctx, tx, inboxID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("confirm message id: %w", err)
	}
	return out, nil
}
