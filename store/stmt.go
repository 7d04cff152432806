package store

import (
	"context"
	"database/sql"
	"fmt"
)

// writeStmts are the statements the writer runs for every message, event
// and delivery, prepared once at Open on the writer connection: parsing SQL
// was an eighth of the ingest CPU. They must be prepared before any
// transaction holds that single connection. A transaction runs one as
// tx.StmtContext(ctx, db.ws.name); every other write is plain SQL text
// (tx.ExecContext), parsed when it runs.
type writeStmts struct {
	// writer.go: every request of a group commit runs under a savepoint.
	savepoint           *sql.Stmt // opens the request's savepoint
	rollbackToSavepoint *sql.Stmt // undoes a failed request
	releaseSavepoint    *sql.Stmt // ends the savepoint, kept or undone

	// ingest.go: storing a message and threading it.
	findIDs          *sql.Stmt // the stored messages and missing-parent links a message's ids name
	findIDsNoAliases *sql.Stmt // findIDs while no message has an alias
	insertLinks      *sql.Stmt // records unresolved candidates as missing-parent links
	dropLink         *sql.Stmt // the message's own id stops being a missing parent
	insertThread     *sql.Stmt // opens a thread
	nextSequence     *sql.Stmt // counts a reply into its thread's sequence and summary
	lastSequence     *sql.Stmt // the sequence nextSequence gave it
	insertMessage    *sql.Stmt // the message row, with its envelope
	insertContents   *sql.Stmt // its trace, packed body and raw bytes
	insertAttachment *sql.Stmt // one attachment

	// deferred.go: the ten-minute lookup, asked for every inbound message.
	unconfirmedOutbound *sql.Stmt // whether the inbox has an outbound Message-ID not yet final
	deferredDuplicate   *sql.Stmt // whether the same message already waits in the deferred queue

	// event.go: the transactional outbox.
	eventTargets          *sql.Stmt // an event's inbox scope and the enabled webhook endpoints
	insertEvent           *sql.Stmt // appends an event to the log
	insertWebhookDelivery *sql.Stmt // queues an event for one endpoint

	// webhook.go: the webhook queue's claims and recorded attempts.
	claimableEndpoints   *sql.Stmt // the enabled endpoints, with their secrets and claimed_seq
	endpointDue          *sql.Stmt // an endpoint's due deliveries: retries and new ones
	claimWebhookDelivery *sql.Stmt // counts a claimed delivery's attempt, leased
	claimedEvent         *sql.Stmt // the event a claimed delivery sends
	advanceClaimedSeq    *sql.Stmt // moves an endpoint's claimed_seq over what was claimed
	recordWebhookStatus  *sql.Stmt // a delivery's status after an attempt
	insertWebhookAttempt *sql.Stmt // the attempt

	// searchindex.go: an indexing pass.
	insertFTS       *sql.Stmt // one message's search row
	insertSearchKey *sql.Stmt // claims a search key for a message

	// delivery.go: the mail delivery queue.
	claimRelay        *sql.Stmt // claims due relay deliveries (the attempt counted first)
	claimInfo         *sql.Stmt // a claimed delivery's inbox, sender and Message-ID
	deliveryStatuses  *sql.Stmt // a message's recipients' statuses
	setMessageState   *sql.Stmt // a message's state, aggregated from them
	recordDelivery    *sql.Stmt // one attempt's outcome
	deliveryMessage   *sql.Stmt // what a delivery event says of its message
	dueLocal          *sql.Stmt // the prepared local deliveries still due
	countLocalAttempt *sql.Stmt // counts local deliveries' attempt

	// inbox.go: a local delivery's recipient.
	recipient *sql.Stmt // the inbox an address names

	// send.go: storing a send.
	findIdempotencyKey   *sql.Stmt // what an idempotency key stored
	insertIdempotencyKey *sql.Stmt // stores a key's result
	parentThread         *sql.Stmt // the thread of a reply's parent
	insertDelivery       *sql.Stmt // queues one recipient
}

// prepareWrites fills db.ws on the writer connection.
func (db *DB) prepareWrites(ctx context.Context) error {
	ws := &db.ws
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&ws.savepoint, sqlSavepoint},
		{&ws.rollbackToSavepoint, sqlRollbackToSavepoint},
		{&ws.releaseSavepoint, sqlReleaseSavepoint},

		{&ws.findIDs, sqlFindIDs},
		{&ws.findIDsNoAliases, sqlFindIDsNoAliases},
		{&ws.insertLinks, sqlInsertLinks},
		{&ws.dropLink, sqlDropLink},
		{&ws.insertThread, sqlInsertThread},
		{&ws.nextSequence, sqlNextSequence},
		{&ws.lastSequence, sqlLastSequence},
		{&ws.insertMessage, sqlInsertMessage},
		{&ws.insertContents, sqlInsertContents},
		{&ws.insertAttachment, sqlInsertAttachment},

		{&ws.unconfirmedOutbound, sqlUnconfirmedOutbound},
		{&ws.deferredDuplicate, sqlDeferredDuplicate},

		{&ws.eventTargets, sqlEventTargets},
		{&ws.insertEvent, sqlInsertEvent},
		{&ws.insertWebhookDelivery, sqlInsertWebhookDelivery},

		{&ws.claimableEndpoints, sqlClaimableEndpoints},
		{&ws.endpointDue, sqlEndpointDue},
		{&ws.claimWebhookDelivery, sqlClaimWebhookDelivery},
		{&ws.claimedEvent, sqlClaimedEvent},
		{&ws.advanceClaimedSeq, sqlAdvanceClaimedSeq},
		{&ws.recordWebhookStatus, sqlRecordWebhookStatus},
		{&ws.insertWebhookAttempt, sqlInsertWebhookAttempt},

		{&ws.insertFTS, sqlInsertFTS},
		{&ws.insertSearchKey, sqlInsertSearchKey},

		{&ws.claimRelay, sqlClaimRelay},
		{&ws.claimInfo, sqlClaimInfo},
		{&ws.deliveryStatuses, sqlDeliveryStatuses},
		{&ws.setMessageState, sqlSetMessageState},
		{&ws.recordDelivery, sqlRecordDelivery},
		{&ws.deliveryMessage, sqlDeliveryMessage},
		{&ws.dueLocal, sqlDueLocal},
		{&ws.countLocalAttempt, sqlCountLocalAttempt},

		{&ws.recipient, sqlRecipient},

		{&ws.findIdempotencyKey, sqlFindIdempotencyKey},
		{&ws.insertIdempotencyKey, sqlInsertIdempotencyKey},
		{&ws.parentThread, sqlParentThread},
		{&ws.insertDelivery, sqlInsertDelivery},
	} {
		s, err := db.w.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.stmt = s
	}
	return nil
}

// readStmt returns query prepared on the read pool, preparing it on first
// use (database/sql re-prepares it per connection as needed). Preparing
// was a tenth of a thread page's CPU. The read path is keyed by SQL text,
// not a typed set like the writer's, because its list pages build their
// SQL from a few optional clauses: the texts are constants and those
// combinations, a small set, with every value bound as an argument.
func (db *DB) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	db.readMu.RLock()
	s, ok := db.readStmts[query]
	db.readMu.RUnlock()
	if ok {
		return s, nil
	}
	db.readMu.Lock()
	defer db.readMu.Unlock()
	if s, ok := db.readStmts[query]; ok {
		return s, nil
	}
	s, err := db.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	db.readStmts[query] = s
	return s, nil
}

// readRow is QueryRowContext on the read pool through query's prepared
// statement.
func (db *DB) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := db.readStmt(ctx, query)
	if err != nil {
		return db.r.QueryRowContext(ctx, query, args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// readQuery is QueryContext on the read pool through query's prepared
// statement.
func (db *DB) readQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := db.readStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// rowScanner is a *sql.Row or *sql.Rows, as the scan functions take.
type rowScanner = interface{ Scan(...any) error }

// queryer is what reads need of a *sql.DB or a *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// scanAll reads every row of a query with scan and closes rows; err is
// the query's own error, and what names the query in errors.
func scanAll[T any](rows *sql.Rows, err error, what string, scan func(rowScanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
