package store

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/thread"
)

// Errors of the idempotency contract (SPEC §6).
var (
	ErrIdempotencyConflict = errors.New("idempotency key reused with a different request")
	ErrIdempotencyExpired  = errors.New("idempotency key expired")
)

// IdempotencyRetention is how long a key's answer is replayed (SPEC §6).
const IdempotencyRetention = 30 * 24 * time.Hour

// Recipient is one recipient of a send and the route it takes.
type Recipient struct {
	Email string
	Type  string // to, cc, bcc
	Route string // local, capture, relay
}

// Delivery statuses (SPEC §6) of a recipient; queued and deferred are
// waiting for the worker, sending is claimed by it.
const (
	StatusQueued    = "queued"
	StatusSending   = "sending"
	StatusSent      = "sent"
	StatusDelivered = "delivered"
	StatusDeferred  = "deferred"
	StatusBounced   = "bounced"
	StatusFailed    = "failed"
	StatusCaptured  = "captured"
)

// Outgoing is a composed send: the exact bytes and who gets them.
type Outgoing struct {
	InboxID string
	Raw     []byte
	// Parsed is Raw parsed, when the caller has parsed it already (an SMTP
	// submission); Send parses Raw itself otherwise. A held send is not
	// parsed until it is released.
	Parsed     *message.Parsed
	ParentID   string // msg_ id of reply_to_message_id; "" opens a new thread
	Bcc        []message.Address
	Recipients []Recipient
	// Confirmed: the Message-ID in Raw is final (no relay may rewrite it).
	Confirmed bool
}

// Idempotency identifies a request for replay (SPEC §6).
type Idempotency struct {
	Key  string
	Hash []byte // of the canonical request (inbox, path, body)
}

// SendRequest is one send as the API (or SMTP submission) makes it.
type SendRequest struct {
	ProjectID   string
	Idempotency *Idempotency
	Out         Outgoing
	// Hold keeps the send for approval (SPEC §7) instead of queueing it.
	Hold bool
}

// SendResult says what a send did: the message it queued, or the draft
// and approval that hold it. It is also what an idempotency key stores, as
// JSON with these names (which were the fields of the HTTP answer the
// column held before migration 0010, so older rows read the same).
type SendResult struct {
	MessageID  string `json:"message_id,omitempty"`
	ThreadID   string `json:"thread_id,omitempty"`
	InboxID    string `json:"inbox_id"`
	DraftID    string `json:"draft_id,omitempty"`    // set when held
	ApprovalID string `json:"approval_id,omitempty"` // set when held
	// Replayed: the key's first request stored this; nothing was sent now.
	Replayed bool `json:"-"`
}

// The statements of Send, prepared at Open (writeStmts).
const (
	sqlParentThread   = `SELECT thread_id FROM messages WHERE id = ? AND inbox_id = ?`
	sqlInsertDelivery = `INSERT INTO deliveries (id, message_id, email, type, route, status, next_attempt_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`

	sqlFindIdempotencyKey = `SELECT request_hash, result, created_at FROM idempotency_keys
		WHERE project_id = ? AND key = ?`
	sqlInsertIdempotencyKey = `INSERT INTO idempotency_keys (project_id, key, request_hash, result, created_at)
		VALUES (?, ?, ?, ?, ?)`
)

// sendIDs are the ids a send creates, minted before it reaches the writer.
type sendIDs struct{ message, thread, draft, approval string }

func (db *DB) newSendIDs() sendIDs {
	return sendIDs{message: db.newID("msg_"), thread: db.newID("thd_"), draft: db.newID("drf_"), approval: db.newID("apr_")}
}

// Send stores an outbound message with its deliveries (or a draft and a
// pending approval when held) and the idempotency answer, all in one
// transaction, and returns once it has committed.
//
// Sends go to the writer (Run) and share its group commits with ingests:
// each is stored under its own savepoint, so one send's failure does not
// fail the others, and one fsync acknowledges the whole batch.
func (db *DB) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	// Parsed and given its ids here, in the caller's goroutine, not by the
	// writer.
	var p *prepared
	switch {
	case req.Hold:
	case req.Out.Parsed != nil:
		p = db.prepare(&Incoming{Raw: req.Out.Raw, Parsed: req.Out.Parsed})
	default:
		p = db.prepareOutgoing(req.Out.Raw)
	}
	ids := db.newSendIDs()
	var res SendResult
	w := &writeReq{ctx: ctx, size: int64(len(req.Out.Raw)), done: make(chan error, 1),
		store: func(ctx context.Context, tx *sql.Tx) (err error) {
			res, err = db.sendTx(ctx, tx, req, p, ids)
			return err
		}}
	if err := db.enqueue(ctx, w); err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	// Once queued, the outcome is awaited even if ctx ends: the writer
	// skips a send whose caller gave up before it was reached, and a send
	// it stored must be answered as stored.
	if err := <-w.done; err != nil {
		return SendResult{}, fmt.Errorf("send: %w", err)
	}
	return res, nil
}

// Replay answers a send with an idempotency key that a first send used
// before, without the request: its stored result (Replayed),
// ErrIdempotencyConflict or ErrIdempotencyExpired, as Send would; or
// ErrNotFound for a key not used yet. A caller checks before it validates
// the request, so that a replay answers as stored even when the request
// would no longer be valid (its parent deleted since).
func (db *DB) Replay(ctx context.Context, projectID string, idem Idempotency) (SendResult, error) {
	return db.replay(db.readRow(ctx, sqlFindIdempotencyKey, projectID, idem.Key), idem)
}

// replay reads a row of sqlFindIdempotencyKey for idem (see Replay).
func (db *DB) replay(row *sql.Row, idem Idempotency) (SendResult, error) {
	var hash, stored []byte
	var created int64
	switch err := row.Scan(&hash, &stored, &created); {
	case errors.Is(err, sql.ErrNoRows):
		return SendResult{}, ErrNotFound
	case err != nil:
		return SendResult{}, fmt.Errorf("find idempotency key: %w", err)
	}
	if db.now().Sub(fromMS(created)) >= IdempotencyRetention {
		return SendResult{}, ErrIdempotencyExpired
	}
	if subtle.ConstantTimeCompare(hash, idem.Hash) != 1 {
		return SendResult{}, ErrIdempotencyConflict
	}
	var res SendResult
	if err := json.Unmarshal(stored, &res); err != nil {
		return SendResult{}, fmt.Errorf("idempotency key %q: %w", idem.Key, err)
	}
	res.Replayed = true
	return res, nil
}

// sendTx is one send inside a batch's transaction.
func (db *DB) sendTx(ctx context.Context, tx *sql.Tx, req SendRequest, p *prepared, ids sendIDs) (SendResult, error) {
	if req.Idempotency != nil {
		row := tx.StmtContext(ctx, db.ws.findIdempotencyKey).QueryRowContext(ctx, req.ProjectID, req.Idempotency.Key)
		if res, err := db.replay(row, *req.Idempotency); !errors.Is(err, ErrNotFound) {
			return res, err
		}
	}
	var res SendResult
	var err error
	if req.Hold {
		res, err = db.holdTx(ctx, tx, req.Out, ids)
	} else {
		res, err = db.queueTx(ctx, tx, req.Out, p, ids, nil)
	}
	if err != nil {
		return SendResult{}, err
	}
	if req.Idempotency != nil {
		stored, err := json.Marshal(res)
		if err != nil {
			return SendResult{}, err
		}
		if _, err := tx.StmtContext(ctx, db.ws.insertIdempotencyKey).ExecContext(ctx, req.ProjectID, req.Idempotency.Key, req.Idempotency.Hash, stored, ms(db.now())); err != nil {
			return SendResult{}, fmt.Errorf("store idempotency key: %w", err)
		}
	}
	return res, nil
}

// prepareOutgoing parses a composed message and computes its columns and
// packed body; it needs no database, so callers run it before taking the
// writer.
func (db *DB) prepareOutgoing(raw []byte) *prepared {
	return db.prepare(&Incoming{Raw: raw, Parsed: message.Parse(raw)})
}

// prepareStored is prepareOutgoing for a message read back from contents
// (a local delivery), stored there as stored: it is not packed again.
func (db *DB) prepareStored(raw []byte, stored packedRaw) *prepared {
	return db.prepare(&Incoming{Raw: raw, Parsed: message.Parse(raw), stored: &stored})
}

// queueTx stores the outbound message (p, prepared from o.Raw) in its
// thread and queues one delivery per recipient. Its events, in order:
// approval.approved when an approval released it (the cause before its
// effect, SPEC §8), message.queued, and message.captured listing the
// recipients captured at once.
func (db *DB) queueTx(ctx context.Context, tx *sql.Tx, o Outgoing, p *prepared, ids sendIDs, approval *released) (SendResult, error) {
	now := db.now()
	threadID, match := "", thread.MatchNew
	if o.ParentID != "" {
		err := tx.StmtContext(ctx, db.ws.parentThread).QueryRowContext(ctx, o.ParentID, o.InboxID).Scan(&threadID)
		switch {
		case err == nil:
			match = thread.MatchReplyToMessageID
		case errors.Is(err, sql.ErrNoRows) && approval != nil:
			// Retention pruned the message it replies to while the send
			// was held: it goes as held and threads by its own
			// In-Reply-To and References, like any reply.
		case errors.Is(err, sql.ErrNoRows):
			return SendResult{}, fmt.Errorf("parent %s: %w", o.ParentID, ErrNotFound)
		default:
			return SendResult{}, fmt.Errorf("find parent: %w", err)
		}
	}
	// Step 5 of SPEC §4 applies to outbound messages too.
	var links []string
	f, err := newTxFinder(ctx, tx, db, o.InboxID, p.own, p.candidates)
	if err != nil {
		return SendResult{}, err
	}
	for _, c := range p.candidates {
		if _, ok, err := f.Message(c.ID); err != nil {
			return SendResult{}, err
		} else if !ok && strings.Contains(c.ID, "@") {
			links = append(links, c.ID)
		}
	}
	approvalID := ""
	if approval != nil {
		approvalID = approval.approvalID
	}
	d, err := db.insertMessage(ctx, tx, p, messageRow{
		id: ids.message, newThreadID: ids.thread, inboxID: o.InboxID, threadID: threadID, direction: "outbound", state: aggregateState(o.Recipients),
		match: match, bcc: jsonList(o.Bcc), confirmed: o.Confirmed, approvalID: approvalID, createdAt: now, links: f.newLinks(links),
		ownLinked: f.linked(p.own),
	})
	if err != nil {
		return SendResult{}, err
	}
	data := messageEventData(d.MessageID, d.ThreadID, "outbound", d.Sequence, false, false)
	if approval != nil {
		if err := db.appendEvent(ctx, tx, o.InboxID, EventApprovalApproved, map[string]any{"approval_id": approval.approvalID,
			"draft_id": approval.draftID, "message_id": d.MessageID, "thread_id": d.ThreadID}); err != nil {
			return SendResult{}, err
		}
		data["approval_id"], data["draft_id"] = approval.approvalID, approval.draftID
	}
	if err := db.appendEvent(ctx, tx, o.InboxID, EventMessageQueued, data); err != nil {
		return SendResult{}, err
	}
	var captured []map[string]any
	for _, r := range o.Recipients {
		status, next := StatusQueued, any(ms(now))
		if r.Route == "capture" {
			status, next = StatusCaptured, nil
			captured = append(captured, map[string]any{"email": r.Email, "delivery_status": StatusCaptured,
				"smtp_code": nil, "smtp_message": nil})
		}
		db.lastDeliveryID++ // as lastPK: a rollback leaves a harmless gap
		if _, err := tx.StmtContext(ctx, db.ws.insertDelivery).ExecContext(ctx, db.lastDeliveryID, d.MessageID, r.Email, r.Type, r.Route, status, next, ms(now)); err != nil {
			return SendResult{}, fmt.Errorf("queue delivery: %w", err)
		}
	}
	if len(captured) > 0 {
		// Captured recipients are final when the send is stored: their
		// delivery event comes with it, like the worker's for the others.
		data := messageEventData(d.MessageID, d.ThreadID, "outbound", d.Sequence, false, false)
		data["recipients"] = captured
		if err := db.appendEvent(ctx, tx, o.InboxID, EventMessageCaptured, data); err != nil {
			return SendResult{}, err
		}
	}
	return SendResult{MessageID: d.MessageID, ThreadID: d.ThreadID, InboxID: o.InboxID}, nil
}

// aggregateState is a message's state from its recipients' statuses: work
// in progress first, then the worst outcome, then the best.
func aggregateState(rs []Recipient) string {
	statuses := make([]string, len(rs))
	for i, r := range rs {
		statuses[i] = StatusQueued
		if r.Route == "capture" {
			statuses[i] = StatusCaptured
		}
	}
	return aggregate(statuses)
}

func aggregate(statuses []string) string {
	for _, s := range []string{StatusSending, StatusDeferred, StatusQueued, StatusFailed, StatusBounced, StatusSent, StatusDelivered, StatusCaptured} {
		for _, got := range statuses {
			if got == s {
				return s
			}
		}
	}
	return StatusQueued
}
