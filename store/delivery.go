package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// DeliveryClaim is a delivery the worker took (status sending). The mail
// delivery queue's operations are ClaimDeliveries, ReleaseDeliveryClaims,
// NextDeliveryAt and RecordDeliveries (with a DeliveryResult); the webhook
// queue's (webhook.go) are named alike, with Webhook before Delivery.
type DeliveryClaim struct {
	ID                 int64
	MessageID, InboxID string
	Email, Type, Route string
	Attempts           int
	FirstAttemptAt     time.Time
	From               string // the inbox address: the envelope sender
	RFCMessageID       string // without brackets
	Domain             string // DomainOf(Email): what claims count in flight
}

// The statements of the delivery queue. Those the writer runs are
// prepared at Open (writeStmts); sqlDueRelay and sqlDueLocalRaw run on the
// read pool.
const (
	// sqlDueRelay lists due relay deliveries in the order they fell due,
	// but for those of the messages in flight (a JSON list).
	sqlDueRelay = `SELECT message_id, email FROM deliveries WHERE next_attempt_at <= ?1 AND route = 'relay'
			AND message_id NOT IN (SELECT value FROM json_each(?2)) ORDER BY next_attempt_at, id LIMIT ?3`
	// sqlDueRelayOf lists the due relay deliveries of some messages (a
	// JSON list).
	sqlDueRelayOf = `SELECT message_id, email FROM deliveries WHERE message_id IN (SELECT value FROM json_each(?1))
			AND next_attempt_at <= ?2 AND route = 'relay'`
	// sqlClaimRelay claims the due relay deliveries of some messages (a
	// JSON list): the attempt is counted first.
	sqlClaimRelay = `UPDATE deliveries SET status = 'sending', attempts = attempts + 1,
				first_attempt_at = coalesce(first_attempt_at, ?1), next_attempt_at = ?2, updated_at = ?1
			WHERE message_id IN (SELECT value FROM json_each(?3)) AND next_attempt_at <= ?1 AND route = 'relay'
			RETURNING id, message_id, email, type, route, attempts, first_attempt_at`
	sqlClaimInfo = `SELECT m.inbox_id, i.address, m.rfc_message_id FROM messages m JOIN inboxes i ON i.id = m.inbox_id
				WHERE m.id = ?`
	sqlDeliveryStatuses = `SELECT status FROM deliveries WHERE message_id = ?`
	sqlSetMessageState  = `UPDATE messages SET state = ? WHERE id = ?`
	sqlRecordDelivery   = `UPDATE deliveries SET status = ?, next_attempt_at = ?, smtp_code = ?, smtp_message = ?, updated_at = ?
			WHERE id = ? RETURNING message_id, email`
	sqlDeliveryMessage = `SELECT inbox_id, thread_id, sequence, simulated, echo FROM messages WHERE id = ?`
	// sqlDueLocalRaw finds due local deliveries and their messages.
	sqlDueLocalRaw = `SELECT d.id, d.message_id, r.data, r.raw_format, m.raw_size FROM deliveries d
		JOIN messages m ON m.id = d.message_id JOIN contents r ON r.message = m.pk
		WHERE d.next_attempt_at <= ? AND d.route = 'local' ORDER BY d.next_attempt_at, d.id LIMIT ?`
	// sqlDueLocal takes the deliveries DeliverLocalDue prepared (a JSON
	// list of ids) that are still due.
	sqlDueLocal = `SELECT d.id, d.message_id, d.email, i.address FROM deliveries d
		JOIN messages m ON m.id = d.message_id JOIN inboxes i ON i.id = m.inbox_id
		WHERE d.id IN (SELECT value FROM json_each(?)) AND d.next_attempt_at <= ? AND d.route = 'local'
		ORDER BY d.next_attempt_at, d.id`
	sqlCountLocalAttempt = `UPDATE deliveries SET attempts = attempts + 1, first_attempt_at = coalesce(first_attempt_at, ?)
		WHERE id IN (SELECT value FROM json_each(?))`
)

// A Claim says which due relay deliveries ClaimDeliveries may take.
type Claim struct {
	Messages int // at most this many messages
	// Busy are the messages whose attempts are still in flight: they are
	// left alone even once their lease has run out.
	Busy []string
	// PerDomain, when positive, is how many messages for one recipient
	// domain may be in flight at once: a message is claimed only while
	// each of its due recipients' domains has fewer, counting those in
	// InFlight (messages in flight by DomainOf) and those the claim
	// takes; and the messages whose domains have the fewest in flight go
	// first, so that two slow domains do not share every slot.
	PerDomain int
	InFlight  map[string]int
	// Lease is how long the claim holds the deliveries: a worker that
	// dies mid-send leaves them due again after it.
	Lease time.Duration
}

// perDomainWindow is how many due deliveries a claim with a limit per
// domain reads when the first few hundred give it fewer messages than it
// may take: the mail it may take from behind the queues of domains at
// their limit. Mail further back waits for those queues to shrink.
const perDomainWindow = 2000

// DomainOf is the domain of an address as outbound delivery groups and
// counts recipients: what follows the last @, lowercase, without a final
// dot.
func DomainOf(addr string) string {
	return strings.ToLower(strings.TrimSuffix(addr[strings.LastIndexByte(addr, '@')+1:], "."))
}

// ClaimDeliveries marks as sending the due relay deliveries of the
// messages c allows, those that fell due first unless c.PerDomain orders
// them otherwise, and returns them grouped by message in the order
// chosen, each message's recipients in the order they were queued (local
// ones are delivered in one transaction by DeliverLocalDue and need no
// claim). The attempt is recorded before anything is sent, and the claim
// is a lease, never retried in a storm.
func (db *DB) ClaimDeliveries(ctx context.Context, c Claim) ([]DeliveryClaim, error) {
	if c.Messages <= 0 {
		return nil, nil
	}
	busyJSON, err := json.Marshal(append([]string{}, c.Busy...)) // [], not null: NOT IN (null) keeps nothing
	if err != nil {
		return nil, err
	}
	// One now for the read and the claim: the claim takes no recipient
	// that fell due after the read.
	now := db.now()
	ids, err := db.chooseClaims(ctx, now, busyJSON, c)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	order := map[string]int{} // the messages to claim, in the order chosen
	for i, id := range ids {
		order[id] = i
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	var out []DeliveryClaim
	err = db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.StmtContext(ctx, db.ws.claimRelay).QueryContext(ctx, ms(now), ms(now.Add(c.Lease)), idsJSON)
		if err != nil {
			return fmt.Errorf("claim deliveries: %w", err)
		}
		for rows.Next() {
			var d DeliveryClaim
			var first int64
			if err := rows.Scan(&d.ID, &d.MessageID, &d.Email, &d.Type, &d.Route, &d.Attempts, &first); err != nil {
				rows.Close()
				return fmt.Errorf("claim deliveries: %w", err)
			}
			d.FirstAttemptAt, d.Domain = fromMS(first), DomainOf(d.Email)
			out = append(out, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		slices.SortFunc(out, func(a, b DeliveryClaim) int {
			return cmp.Or(cmp.Compare(order[a.MessageID], order[b.MessageID]), cmp.Compare(a.ID, b.ID))
		})
		for i := range out {
			if err := tx.StmtContext(ctx, db.ws.claimInfo).QueryRowContext(ctx, out[i].MessageID).
				Scan(&out[i].InboxID, &out[i].From, &out[i].RFCMessageID); err != nil {
				return fmt.Errorf("claim deliveries: %w", err)
			}
		}
		return db.updateStates(ctx, tx, messageIDsOf(out))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// chooseClaims chooses the messages a claim takes: those that fell due
// first, or with c.PerDomain, those pickByDomain prefers, judged by all
// their due recipients. Most rounds of the worker find nothing due: the
// read pool says so without taking the writer. A message has at most
// --max-recipients deliveries, so a few hundred rows name enough
// messages, unless domains at their limit hold the front of the queue:
// then perDomainWindow rows are read.
func (db *DB) chooseClaims(ctx context.Context, now time.Time, busyJSON []byte, c Claim) ([]string, error) {
	st, err := db.readStmt(ctx, sqlDueRelay)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	var ids []string
	for _, window := range []int{100 * c.Messages, perDomainWindow} {
		rows, err := st.QueryContext(ctx, ms(now), busyJSON, window)
		dues, err := scanAll(rows, err, "claim deliveries", scanDue)
		if err != nil {
			return nil, err
		}
		var candidates []string // in the order they fell due
		domains := map[string][]string{}
		for _, d := range dues {
			if _, ok := domains[d.message]; !ok {
				candidates = append(candidates, d.message)
			}
			d.addTo(domains)
		}
		if c.PerDomain <= 0 {
			return candidates[:min(c.Messages, len(candidates))], nil
		}
		// A message's due recipients may run past the window (each retry
		// has its own jitter): a message picked is judged again with all
		// of them, until the messages picked are all known whole.
		whole := map[string]bool{}
		for {
			ids = pickByDomain(candidates, domains, c.Messages, c.PerDomain, c.InFlight)
			partial := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return whole[id] })
			if len(partial) == 0 {
				break
			}
			if err := db.dueDomains(ctx, now, partial, domains); err != nil {
				return nil, err
			}
			for _, id := range partial {
				whole[id] = true
			}
		}
		if len(ids) == c.Messages || len(dues) < window || window >= perDomainWindow {
			break
		}
	}
	return ids, nil
}

// dueDomains sets domains[id], for each message of ids, to the domains
// of all its due relay recipients.
func (db *DB) dueDomains(ctx context.Context, now time.Time, ids []string, domains map[string][]string) error {
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	st, err := db.readStmt(ctx, sqlDueRelayOf)
	if err != nil {
		return fmt.Errorf("claim deliveries: %w", err)
	}
	rows, err := st.QueryContext(ctx, idsJSON, ms(now))
	dues, err := scanAll(rows, err, "claim deliveries", scanDue)
	if err != nil {
		return err
	}
	for _, id := range ids {
		domains[id] = nil
	}
	for _, d := range dues {
		d.addTo(domains)
	}
	return nil
}

// dueRow is a due relay delivery as a claim reads it.
type dueRow struct{ message, email string }

func scanDue(r rowScanner) (d dueRow, err error) { return d, r.Scan(&d.message, &d.email) }

// addTo adds the delivery's domain to its message's in domains.
func (d dueRow) addTo(domains map[string][]string) {
	if dom := DomainOf(d.email); !slices.Contains(domains[d.message], dom) {
		domains[d.message] = append(domains[d.message], dom)
	}
}

// pickByDomain chooses up to n of the candidates (in the order they fell
// due) one at a time: each time the one whose busiest domain has the
// fewest messages in flight, the earlier on a tie, and never one that
// would take a domain past perDomain.
func pickByDomain(candidates []string, domains map[string][]string, n, perDomain int, inFlight map[string]int) []string {
	taken := maps.Clone(inFlight)
	if taken == nil {
		taken = map[string]int{}
	}
	busiest := func(id string) int {
		m := 0
		for _, d := range domains[id] {
			m = max(m, taken[d])
		}
		return m
	}
	var picked []string
	done := map[string]bool{}
	for len(picked) < n {
		best := ""
		for _, id := range candidates {
			if !done[id] && busiest(id) < perDomain && (best == "" || busiest(id) < busiest(best)) {
				best = id
			}
		}
		if best == "" {
			break
		}
		done[best] = true
		for _, d := range domains[best] {
			taken[d]++
		}
		picked = append(picked, best)
	}
	return picked
}

func messageIDsOf(cs []DeliveryClaim) []string {
	seen := map[string]bool{}
	var ids []string
	for _, c := range cs {
		if !seen[c.MessageID] {
			seen[c.MessageID] = true
			ids = append(ids, c.MessageID)
		}
	}
	return ids
}

// updateStates recomputes the state of outbound messages from their
// recipients.
func (db *DB) updateStates(ctx context.Context, tx *sql.Tx, messageIDs []string) error {
	for _, id := range messageIDs {
		rows, err := tx.StmtContext(ctx, db.ws.deliveryStatuses).QueryContext(ctx, id)
		if err != nil {
			return fmt.Errorf("message state: %w", err)
		}
		var statuses []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				rows.Close()
				return err
			}
			statuses = append(statuses, s)
		}
		rows.Close()
		if _, err := tx.StmtContext(ctx, db.ws.setMessageState).ExecContext(ctx, aggregate(statuses), id); err != nil {
			return fmt.Errorf("message state: %w", err)
		}
	}
	return nil
}

// ReleaseDeliveryClaims makes deliveries left in sending by a process
// that stopped mid-attempt due now, deferred with message.deferred (SPEC
// §8: their messages' state changes). Only one process works the queue,
// so at start every claim is orphaned; the attempt stays counted.
func (db *DB) ReleaseDeliveryClaims(ctx context.Context) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM deliveries WHERE status = 'sending' ORDER BY id`)
		ids, err := scanAll(rows, err, "release delivery claims", func(r rowScanner) (id int64, err error) { return id, r.Scan(&id) })
		if err != nil || len(ids) == 0 {
			return err
		}
		now := db.now()
		results := make([]DeliveryResult, len(ids))
		for i, id := range ids {
			results[i] = DeliveryResult{ID: id, Status: StatusDeferred, NextAttempt: now, Message: interruptedAttempt}
		}
		return db.recordDeliveriesTx(ctx, tx, results)
	})
}

// interruptedAttempt is the smtp_message of a delivery whose attempt a
// stop interrupted: whether the relay took it is unknown, and it is tried
// again.
const interruptedAttempt = "the attempt was interrupted: inboxd stopped before the relay answered"

// NextDeliveryAt returns when the earliest waiting delivery is due.
func (db *DB) NextDeliveryAt(ctx context.Context) (time.Time, bool, error) {
	return db.NextDeliveryAfter(ctx, time.Time{})
}

// NextDeliveryAfter is when the first attempt due after t is due, if any.
func (db *DB) NextDeliveryAfter(ctx context.Context, t time.Time) (time.Time, bool, error) {
	var next sql.NullInt64
	if err := db.readRow(ctx, `SELECT min(next_attempt_at) FROM deliveries WHERE next_attempt_at > ?`, ms(t)).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("next delivery: %w", err)
	}
	return fromMS(next.Int64), next.Valid, nil
}

// DeliveryResult is the outcome of one attempt.
type DeliveryResult struct {
	ID          int64
	Status      string // sent, delivered, deferred, bounced, failed
	Code        int
	Message     string
	NextAttempt time.Time // for deferred
}

// RelayReply is the smarthost's answer for one recipient, what a delivery
// records as smtp_code and smtp_message. It is defined here, beside the
// rows it fills, so that the relay client (smtp) and the worker that
// declares the relay it needs (outbound.Relay) share it without importing
// each other.
type RelayReply struct {
	Code    int    // 0 when no answer came (the connection failed first)
	Message string // the reply text, or the connection error
}

// RecordDeliveries stores attempt outcomes and the messages' states.
func (db *DB) RecordDeliveries(ctx context.Context, results []DeliveryResult) error {
	return db.tx(ctx, func(tx *sql.Tx) error { return db.recordDeliveriesTx(ctx, tx, results) })
}

// recordDeliveriesTx stores outcomes, recomputes the messages' states and
// emits one delivery event per message and status, listing its recipients
// (SPEC §8), in tx.
func (db *DB) recordDeliveriesTx(ctx context.Context, tx *sql.Tx, results []DeliveryResult) error {
	db.wakes |= wakeOutbound // from a DSN too, in a batch that marks its wakes
	now := ms(db.now())
	var msgs []string
	seen := map[string]bool{}
	type group struct{ message, status string }
	var order []group
	recipients := map[group][]map[string]any{}
	for _, r := range results {
		var next any
		if r.Status == StatusDeferred {
			next = ms(r.NextAttempt)
		}
		var msg, email string
		err := tx.StmtContext(ctx, db.ws.recordDelivery).QueryRowContext(ctx, r.Status, next, nullIfZero(r.Code), nullIfEmpty(r.Message), now, r.ID).Scan(&msg, &email)
		if errors.Is(err, sql.ErrNoRows) {
			continue // deleted with its message (its inbox) while it was tried
		}
		if err != nil {
			return fmt.Errorf("record delivery %d: %w", r.ID, err)
		}
		if !seen[msg] {
			seen[msg] = true
			msgs = append(msgs, msg)
		}
		g := group{msg, r.Status}
		if _, ok := recipients[g]; !ok {
			order = append(order, g)
		}
		recipients[g] = append(recipients[g], map[string]any{"email": email, "delivery_status": r.Status,
			"smtp_code": nullIfZero(r.Code), "smtp_message": nullIfEmpty(r.Message)})
	}
	if err := db.updateStates(ctx, tx, msgs); err != nil {
		return err
	}
	for _, g := range order {
		var inboxID, threadID string
		var seq int64
		var simulated, echo bool
		if err := tx.StmtContext(ctx, db.ws.deliveryMessage).QueryRowContext(ctx, g.message).
			Scan(&inboxID, &threadID, &seq, &simulated, &echo); err != nil {
			return fmt.Errorf("delivery event: %w", err)
		}
		data := messageEventData(g.message, threadID, "outbound", seq, simulated, echo)
		data["recipients"] = recipients[g]
		if err := db.appendEvent(ctx, tx, inboxID, "message."+g.status, data); err != nil {
			return err
		}
	}
	return nil
}

func nullIfZero(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

// DeliverLocalDue delivers up to limit due local deliveries through the
// ingest path (each arrives as inbound mail in its inbox, threaded by its
// headers) and marks them delivered, all in one transaction: no claim, no
// lease, one commit. It returns how many it delivered.
func (db *DB) DeliverLocalDue(ctx context.Context, limit int) (int, error) {
	// The due deliveries are found, and their messages read and parsed,
	// before the writer is taken: a message's raw bytes never change, so
	// what is parsed here is what the transaction would parse.
	due, err := db.prepareDueLocal(ctx, limit)
	if err != nil || len(due.ids) == 0 {
		// Nothing due as of the last commit: no write transaction (each
		// one takes the writer and wakes every waiter on Changed). What a
		// later commit queues, the caller sees when that commit wakes it.
		return 0, err
	}
	return db.deliverLocalDue(ctx, due)
}

// dueLocal is what DeliverLocalDue found due and prepared: deliveries by
// id, their messages by id.
type dueLocal struct {
	ids      []int64
	messages map[string]*prepared
}

// prepareDueLocal finds up to limit due local deliveries on the read pool
// and prepares their messages.
func (db *DB) prepareDueLocal(ctx context.Context, limit int) (dueLocal, error) {
	due := dueLocal{messages: map[string]*prepared{}}
	st, err := db.readStmt(ctx, sqlDueLocalRaw)
	if err != nil {
		return dueLocal{}, fmt.Errorf("due local deliveries: %w", err)
	}
	rows, err := st.QueryContext(ctx, ms(db.now()), limit)
	if err != nil {
		return dueLocal{}, fmt.Errorf("due local deliveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var msg string
		var stored packedRaw
		var size int64
		if err := rows.Scan(&id, &msg, &stored.data, &stored.format, &size); err != nil {
			return dueLocal{}, fmt.Errorf("due local deliveries: %w", err)
		}
		due.ids = append(due.ids, id)
		if _, ok := due.messages[msg]; !ok {
			raw, err := stored.unpack(size)
			if err != nil {
				return dueLocal{}, fmt.Errorf("due local delivery of %s: %w", msg, err)
			}
			if stored.data == nil {
				stored.data = []byte{} // an empty blob reads back as nil
			}
			due.messages[msg] = db.prepareStored(raw, stored)
		}
	}
	return due, rows.Err()
}

// localRecipient is the inbox a local delivery's address reaches, with
// the scope of the event its copy raises, both read in tx.
func (db *DB) localRecipient(ctx context.Context, tx *sql.Tx, email string) (Target, eventScope, error) {
	t, err := db.lookupRecipientTx(ctx, tx, email)
	if err != nil {
		return Target{}, eventScope{}, err
	}
	s, found, err := db.findEventScope(ctx, tx, t.InboxID)
	if err == nil && !found {
		err = ErrNotFound
	}
	return t, s, err
}

// deliverLocalDue is DeliverLocalDue's transaction. It delivers the
// prepared deliveries that are still due; any that became due meanwhile
// wait for the next round (their commit wakes the worker).
func (db *DB) deliverLocalDue(ctx context.Context, due dueLocal) (int, error) {
	prepared, err := json.Marshal(due.ids)
	if err != nil {
		return 0, err
	}
	n := 0
	var stored []Delivered // outcomes, for noteDuplicates once committed
	err = db.tx(ctx, func(tx *sql.Tx) error {
		stored = stored[:0]
		// The statements run without the caller's cancellation: under a
		// cancellable context, database/sql and the driver start a watcher
		// goroutine for every statement and every result set. A cancelled
		// caller stops the round only before it begins (db.tx); a round
		// that has begun is short and finishes.
		ctx := context.WithoutCancel(ctx)
		now := db.now()
		rows, err := tx.StmtContext(ctx, db.ws.dueLocal).QueryContext(ctx, string(prepared), ms(now))
		if err != nil {
			return fmt.Errorf("due local deliveries: %w", err)
		}
		var cs []DeliveryClaim
		var ids []int64
		for rows.Next() {
			var c DeliveryClaim
			if err := rows.Scan(&c.ID, &c.MessageID, &c.Email, &c.From); err != nil {
				rows.Close()
				return fmt.Errorf("due local deliveries: %w", err)
			}
			if due.messages[c.MessageID] == nil {
				// Another send's id: never, as ids are not reused, but a
				// guard against a nil prepared message. The next round takes it.
				continue
			}
			cs = append(cs, c)
			ids = append(ids, c.ID)
		}
		rows.Close()
		if len(cs) == 0 {
			return nil
		}
		n = len(cs)
		list, _ := json.Marshal(ids)
		if _, err := tx.StmtContext(ctx, db.ws.countLocalAttempt).ExecContext(ctx, ms(now), string(list)); err != nil {
			return fmt.Errorf("count local attempts: %w", err)
		}
		var results []DeliveryResult
		type recipient struct {
			target Target
			scope  eventScope
			err    error
		}
		recipients := map[string]recipient{} // most of a batch goes to few inboxes
		for _, c := range cs {
			rc, ok := recipients[c.Email]
			if !ok {
				rc.target, rc.scope, rc.err = db.localRecipient(ctx, tx, c.Email)
				recipients[c.Email] = rc
			}
			if errors.Is(rc.err, ErrNotFound) {
				// The inbox was deleted after the send was queued.
				results = append(results, DeliveryResult{ID: c.ID, Status: StatusBounced, Code: 550, Message: "5.1.1 No such mailbox here"})
				continue
			}
			if rc.err != nil {
				return rc.err
			}
			msg := due.messages[c.MessageID]
			// The copy shares the parse; what differs is this delivery's
			// trace, envelope and time.
			p := *msg
			p.in = &Incoming{
				Raw: msg.in.Raw, Parsed: msg.in.Parsed, ReceivedAt: now,
				Trace:    fmt.Appendf(nil, "Received: from %s (inboxd local delivery)\r\n\tby inboxd;\r\n\t%s\r\n", c.From, now.Format(time.RFC1123Z)),
				Envelope: Envelope{MailFrom: c.From, RcptTo: []string{c.Email}, RemoteIP: "127.0.0.1", Helo: "inboxd"},
			}
			d, err := db.ingestOne(ctx, tx, &p, rc.scope, rc.target.InboxID, rc.target.Tag)
			if err != nil {
				return fmt.Errorf("local delivery %d: %w", c.ID, err)
			}
			stored = append(stored, d)
			results = append(results, DeliveryResult{ID: c.ID, Status: StatusDelivered, Code: 250, Message: "2.0.0 Delivered locally"})
		}
		return db.recordDeliveriesTx(ctx, tx, results)
	})
	if err == nil {
		db.noteDuplicates(stored)
	}
	return n, err
}

// DeliveryStatus is one recipient's status as shown in a message object.
type DeliveryStatus struct {
	Email, Type, Status string
	Code                *int
	Message             *string
}

// DeliveriesOf returns the recipients' statuses of several outbound
// messages, by message id, in recipient order.
func (db *DB) DeliveriesOf(ctx context.Context, messageIDs []string) (map[string][]DeliveryStatus, error) {
	out := map[string][]DeliveryStatus{}
	if len(messageIDs) == 0 {
		return out, nil
	}
	rows, err := db.readQuery(ctx, `SELECT message_id, email, type, status, smtp_code, smtp_message FROM deliveries
		WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY message_id, id`, stringsJSON(messageIDs))
	if err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d DeliveryStatus
		var msg string
		if err := rows.Scan(&msg, &d.Email, &d.Type, &d.Status, &d.Code, &d.Message); err != nil {
			return nil, fmt.Errorf("deliveries: %w", err)
		}
		out[msg] = append(out[msg], d)
	}
	return out, rows.Err()
}

// DeliveryCounts counts the mail delivery queue's rows by status (the
// outbound metrics of SPEC §13): queued and deferred are waiting, the
// rest final.
func (db *DB) DeliveryCounts(ctx context.Context) (map[string]int64, error) {
	return db.countBy(ctx, `SELECT status, count(*) FROM deliveries GROUP BY status`)
}

// countBy reads a two-column (key, count) query into a map.
func (db *DB) countBy(ctx context.Context, query string) (map[string]int64, error) {
	rows, err := db.r.QueryContext(ctx, query)
	type kv struct {
		k string
		n int64
	}
	list, err := scanAll(rows, err, "count", func(r rowScanner) (v kv, err error) { return v, r.Scan(&v.k, &v.n) })
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(list))
	for _, v := range list {
		out[v.k] = v.n
	}
	return out, nil
}
