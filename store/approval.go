package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/inboxd/inboxd/message"
)

// released names the approval whose decision queues a send.
type released struct{ approvalID, draftID string }

type draftJSON struct {
	Bcc        []message.Address `json:"bcc"`
	Recipients []Recipient       `json:"recipients"`
	ParentID   string            `json:"parent_id"`
	Confirmed  bool              `json:"confirmed"`
}

// holdTx stores a draft and a pending approval bound to the draft's hash.
func (db *DB) holdTx(ctx context.Context, tx *sql.Tx, o Outgoing, ids sendIDs) (SendResult, error) {
	now := db.now()
	draftID, approvalID := ids.draft, ids.approval
	meta, err := json.Marshal(draftJSON{Bcc: o.Bcc, Recipients: o.Recipients, ParentID: o.ParentID, Confirmed: o.Confirmed})
	if err != nil {
		return SendResult{}, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO drafts (id, inbox_id, send, raw, created_at) VALUES (?, ?, ?, ?, ?)`,
		draftID, o.InboxID, string(meta), o.Raw, ms(now)); err != nil {
		return SendResult{}, fmt.Errorf("insert draft: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO approvals (id, inbox_id, draft_id, draft_sha256, requested_at) VALUES (?, ?, ?, ?, ?)`,
		approvalID, o.InboxID, draftID, sha(append(o.Raw, meta...)), ms(now)); err != nil {
		return SendResult{}, fmt.Errorf("insert approval: %w", err)
	}
	if err := db.appendEvent(ctx, tx, o.InboxID, EventApprovalRequested, map[string]any{"approval_id": approvalID, "draft_id": draftID}); err != nil {
		return SendResult{}, err
	}
	return SendResult{InboxID: o.InboxID, DraftID: draftID, ApprovalID: approvalID}, nil
}

// Approval is a held send and its decision (SPEC §7).
type Approval struct {
	ID, DraftID, InboxID, Status string
	RequestedAt                  time.Time
	DecidedAt                    *time.Time
	DecidedBy, Reason            *string
	MessageID, ThreadID          *string
	Raw                          []byte
	Bcc                          []message.Address
}

// ErrDecided is returned when an approval was already decided.
var ErrDecided = errors.New("approval already decided")

const approvalColumns = `a.id, a.draft_id, a.inbox_id, a.status, a.requested_at, a.decided_at, a.decided_by, a.reason,
	a.message_id, a.thread_id, d.raw, d.send`

func scanApproval(row rowScanner) (Approval, error) {
	var a Approval
	var requested int64
	var decided sql.NullInt64
	var meta string
	if err := row.Scan(&a.ID, &a.DraftID, &a.InboxID, &a.Status, &requested, &decided, &a.DecidedBy, &a.Reason,
		&a.MessageID, &a.ThreadID, &a.Raw, &meta); err != nil {
		return Approval{}, err
	}
	a.RequestedAt = fromMS(requested)
	if decided.Valid {
		t := fromMS(decided.Int64)
		a.DecidedAt = &t
	}
	var d draftJSON
	if err := json.Unmarshal([]byte(meta), &d); err != nil {
		return Approval{}, fmt.Errorf("approval %s draft: %w", a.ID, err)
	}
	a.Bcc = d.Bcc
	return a, nil
}

// GetApproval returns one approval of an inbox.
func (db *DB) GetApproval(ctx context.Context, inboxID, approvalID string) (Approval, error) {
	a, err := scanApproval(db.r.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals a JOIN drafts d ON d.id = a.draft_id
		WHERE a.id = ? AND a.inbox_id = ?`, approvalID, inboxID))
	if errors.Is(err, sql.ErrNoRows) {
		return Approval{}, fmt.Errorf("approval %s: %w", approvalID, ErrNotFound)
	}
	if err != nil {
		return Approval{}, fmt.Errorf("get approval: %w", err)
	}
	return a, nil
}

// ListApprovals returns an inbox's approvals, newest first, after the
// keyset position after.
func (db *DB) ListApprovals(ctx context.Context, inboxID string, after *TimeKey, limit int) ([]Approval, error) {
	q := `SELECT ` + approvalColumns + ` FROM approvals a JOIN drafts d ON d.id = a.draft_id WHERE a.inbox_id = ?`
	args := []any{inboxID}
	if after != nil {
		q += ` AND (a.requested_at, a.id) < (?, ?)`
		args = append(args, after.At, after.ID)
	}
	rows, err := db.r.QueryContext(ctx, q+` ORDER BY a.requested_at DESC, a.id DESC LIMIT ?`, append(args, limit)...)
	return scanAll(rows, err, "list approvals", scanApproval)
}

// Decide approves (queueing the exact draft) or rejects a pending approval.
func (db *DB) Decide(ctx context.Context, inboxID, approvalID, keyID string, approve bool, reason string) (Approval, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var status, meta, draftID string
		var raw, want []byte
		err := tx.QueryRowContext(ctx, `SELECT a.status, a.draft_sha256, d.raw, d.send, d.id FROM approvals a JOIN drafts d ON d.id = a.draft_id
			WHERE a.id = ? AND a.inbox_id = ?`, approvalID, inboxID).Scan(&status, &want, &raw, &meta, &draftID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("approval %s: %w", approvalID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if status != "pending" {
			return ErrDecided
		}
		if !bytes.Equal(sha(append(raw, meta...)), want) {
			return fmt.Errorf("approval %s: draft changed since it was requested", approvalID)
		}
		now := ms(db.now())
		if !approve {
			if _, err := tx.ExecContext(ctx, `UPDATE approvals SET status = 'rejected', decided_at = ?, decided_by = ?, reason = ? WHERE id = ?`,
				now, keyID, nullIfEmpty(reason), approvalID); err != nil {
				return err
			}
			return db.appendEvent(ctx, tx, inboxID, EventApprovalRejected, map[string]any{"approval_id": approvalID, "draft_id": draftID})
		}
		var d draftJSON
		if err := json.Unmarshal([]byte(meta), &d); err != nil {
			return fmt.Errorf("draft: %w", err)
		}
		res, err := db.queueTx(ctx, tx, Outgoing{InboxID: inboxID, Raw: raw, ParentID: d.ParentID, Bcc: d.Bcc,
			Recipients: d.Recipients, Confirmed: d.Confirmed}, db.prepareOutgoing(raw), db.newSendIDs(), &released{approvalID, draftID})
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE approvals SET status = 'approved', decided_at = ?, decided_by = ?, message_id = ?, thread_id = ?
			WHERE id = ?`, now, keyID, res.MessageID, res.ThreadID, approvalID)
		return err
	})
	if err != nil {
		return Approval{}, fmt.Errorf("decide approval: %w", err)
	}
	return db.GetApproval(ctx, inboxID, approvalID)
}

// PendingApprovals returns how many approvals of an inbox wait for a
// decision.
func (db *DB) PendingApprovals(ctx context.Context, inboxID string) (int64, error) {
	var n int64
	if err := db.readRow(ctx, `SELECT count(*) FROM approvals WHERE inbox_id = ? AND status = 'pending'`, inboxID).Scan(&n); err != nil {
		return 0, fmt.Errorf("pending approvals: %w", err)
	}
	return n, nil
}
