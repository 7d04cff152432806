package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// APIVersion is the api_version of every event envelope (SPEC §8).
const APIVersion = "2026-12-01"

// Event types (SPEC §8).
const (
	EventMessageReceived   = "message.received"
	EventMessageQueued     = "message.queued"
	EventMessageCaptured   = "message.captured"
	EventApprovalRequested = "approval.requested"
	EventApprovalApproved  = "approval.approved"
	EventApprovalRejected  = "approval.rejected"
)

// EventTypes lists every event type.
func EventTypes() []string {
	return []string{EventMessageReceived, EventMessageQueued, "message.sent", "message.delivered", EventMessageCaptured,
		"message.deferred", "message.bounced", "message.failed", EventApprovalRequested, EventApprovalApproved, EventApprovalRejected}
}

type envelope struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	APIVersion string `json:"api_version"`
	CreatedAt  string `json:"created_at"`
	Data       any    `json:"data"`
}

const (
	// sqlEventTargets is an event's inbox scope and the project's enabled
	// webhook endpoints, in one query (one row with NULLs when there are
	// none; no row when the inbox does not exist).
	sqlEventTargets = `SELECT i.project_id, i.environment, e.id, e.event_types, e.inbox_ids
		FROM inboxes i LEFT JOIN webhook_endpoints e ON e.project_id = i.project_id AND e.enabled = 1
		WHERE i.id = ?`
	sqlInsertEvent = `INSERT INTO events (seq, id, project_id, inbox_id, type, environment, body, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	// sqlLastEventSeq is the highest seq handed out so far, which Open
	// counts on from (DB.lastEventSeq): a seq is never handed out twice,
	// even after retention emptied the log, since events_floor holds the
	// last seq it deleted (migration 0014). One lookup per project: the
	// log is in (project_id, seq) order.
	sqlLastEventSeq = `SELECT max(coalesce((SELECT max((SELECT max(seq) FROM events e WHERE e.project_id = p.id)) FROM projects p), 0),
		(SELECT seq FROM events_floor))`
	// A new delivery is due at once; the worker finds it past its
	// endpoint's claimed_seq (migration 0017), not in the due index.
	sqlInsertWebhookDelivery = `INSERT INTO webhook_deliveries (endpoint_id, event_seq, created_at) VALUES (?, ?, ?)`
)

// eventScope is what an event of an inbox needs to know about it: its
// project and environment, and the project's enabled webhook endpoints.
type eventScope struct {
	project, environment string
	endpoints            []scopedEndpoint
}

type scopedEndpoint struct {
	id      string
	types   string         // JSON list; empty: every type
	inboxes sql.NullString // JSON list; NULL: every inbox
}

// findEventScope looks up inboxID's eventScope; found is false when the
// inbox does not exist.
func (db *DB) findEventScope(ctx context.Context, tx *sql.Tx, inboxID string) (s eventScope, found bool, err error) {
	rows, err := tx.StmtContext(ctx, db.ws.eventTargets).QueryContext(ctx, inboxID)
	if err != nil {
		return s, false, fmt.Errorf("find webhook endpoints: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ep, types, inboxes sql.NullString
		if err := rows.Scan(&s.project, &s.environment, &ep, &types, &inboxes); err != nil {
			return s, false, fmt.Errorf("find webhook endpoints: %w", err)
		}
		found = true
		if ep.Valid {
			s.endpoints = append(s.endpoints, scopedEndpoint{id: ep.String, types: types.String, inboxes: inboxes})
		}
	}
	if err := rows.Err(); err != nil {
		return s, false, fmt.Errorf("find webhook endpoints: %w", err)
	}
	return s, found, nil
}

// appendEvent writes an event to the log and a pending delivery for every
// enabled webhook endpoint that wants it, in the caller's transaction
// (SPEC §8–§9: nothing committed is left undelivered). data is completed
// with inbox_id and environment.
func (db *DB) appendEvent(ctx context.Context, tx *sql.Tx, inboxID, typ string, data map[string]any) error {
	s, found, err := db.findEventScope(ctx, tx, inboxID)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("inbox %s: %w", inboxID, sql.ErrNoRows)
	}
	return db.appendScopedEvent(ctx, tx, s, inboxID, typ, data)
}

// appendScopedEvent is appendEvent for a caller that looked the inbox's
// scope up in the same transaction.
func (db *DB) appendScopedEvent(ctx context.Context, tx *sql.Tx, s eventScope, inboxID, typ string, data map[string]any) error {
	now := db.now()
	data["inbox_id"] = inboxID
	data["environment"] = s.environment
	id := db.newID("evt_")
	body, err := json.Marshal(envelope{ID: id, Type: typ, APIVersion: APIVersion,
		CreatedAt: now.UTC().Format("2006-01-02T15:04:05.000Z"), Data: data})
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	// A transaction that rolls back leaves its seqs unused: the log may
	// skip a number, never repeat one.
	seq := db.lastEventSeq.Add(1)
	if _, err := tx.StmtContext(ctx, db.ws.insertEvent).ExecContext(ctx, seq, id, s.project, inboxID, typ, s.environment, body, ms(now)); err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	for _, ep := range s.endpoints {
		if !wants(ep.types, ep.inboxes, typ, inboxID) {
			continue
		}
		if _, err := tx.StmtContext(ctx, db.ws.insertWebhookDelivery).ExecContext(ctx, ep.id, seq, ms(now)); err != nil {
			return fmt.Errorf("queue webhook delivery: %w", err)
		}
		db.wakes |= wakeWebhooks
	}
	return nil
}

// wants reports whether an endpoint's filters take an event.
func wants(typesJSON string, inboxesJSON sql.NullString, typ, inboxID string) bool {
	var types []string
	if json.Unmarshal([]byte(typesJSON), &types) == nil && len(types) > 0 && !slices.Contains(types, typ) {
		return false
	}
	if inboxesJSON.Valid {
		var inboxes []string
		if json.Unmarshal([]byte(inboxesJSON.String), &inboxes) == nil && !slices.Contains(inboxes, inboxID) {
			return false
		}
	}
	return true
}

// messageEventData is the thin data of a message.* event (SPEC §8).
func messageEventData(messageID, threadID, direction string, sequence int64, simulated, echo bool) map[string]any {
	return map[string]any{"message_id": messageID, "thread_id": threadID, "direction": direction,
		"sequence": sequence, "simulated": simulated, "echo": echo}
}

// Event is one entry of the log as the events API shows it.
type Event struct {
	Seq         int64
	InboxID     string
	Type        string
	Body        []byte // the envelope
	OccurredAt  time.Time
	Environment string
}

// EventFilter selects events of a project.
type EventFilter struct {
	ProjectID string
	After     int64    // seq; 0 = from the oldest retained
	Types     []string // empty = all
	InboxIDs  []string // nil = all
	// Scan bounds how many events one read examines, matching or not (0:
	// no bound), so that a rare filter over a long log answers at once
	// with the position it reached instead of reading the whole log.
	Scan int
}

// EventPage is one read of the log.
type EventPage struct {
	Events []Event // the matching events, in log order
	// Next is the position reached: the seq of the last event examined,
	// matching or not (After when none was). Reading on from Next misses
	// no matching event.
	Next int64
	// More reports that the log goes on past Next: the read stopped at
	// the limit or at the Scan bound, not at the end of the log.
	More bool
}

// sqlEventWindow reads the log after a position, each event with whether
// the filter (%s, whose arguments come first) takes it; the body only of
// those it takes.
const sqlEventWindow = `SELECT seq, inbox_id, type, created_at, environment, m, CASE WHEN m THEN body END FROM (
	SELECT seq, coalesce(inbox_id, '') AS inbox_id, type, created_at, environment, body, (%s) AS m
	FROM events WHERE project_id = ? AND seq > ? ORDER BY seq LIMIT ?)`

// match is the condition (and its arguments) of the filter's types and
// inboxes.
func (f EventFilter) match() (string, []any) {
	match, args := "1", []any{}
	if len(f.Types) > 0 {
		b, _ := json.Marshal(f.Types)
		match += ` AND type IN (SELECT value FROM json_each(?))`
		args = append(args, string(b))
	}
	if f.InboxIDs != nil {
		b, _ := json.Marshal(f.InboxIDs)
		match += ` AND inbox_id IN (SELECT value FROM json_each(?))`
		args = append(args, string(b))
	}
	return match, args
}

// Events returns up to limit events after f.After, in log order.
func (db *DB) Events(ctx context.Context, f EventFilter, limit int) ([]Event, error) {
	p, err := db.EventLog(ctx, f, limit)
	return p.Events, err
}

// EventLog reads the log after f.After: up to limit matching events,
// examining at most f.Scan events, and the position it reached (SPEC §8:
// the cursor advances past the events a filtered page skipped).
func (db *DB) EventLog(ctx context.Context, f EventFilter, limit int) (EventPage, error) {
	match, args := f.match()
	window := -1 // SQLite: no limit
	if f.Scan > 0 {
		window = f.Scan + 1 // one more, to know whether the log goes on
	}
	rows, err := db.r.QueryContext(ctx, fmt.Sprintf(sqlEventWindow, match), append(args, f.ProjectID, f.After, window)...)
	if err != nil {
		return EventPage{}, fmt.Errorf("events: %w", err)
	}
	defer rows.Close()
	p := EventPage{Next: f.After}
	for examined := 0; rows.Next(); examined++ {
		if f.Scan > 0 && examined == f.Scan {
			p.More = true
			break
		}
		var e Event
		var at int64
		var matched bool
		if err := rows.Scan(&e.Seq, &e.InboxID, &e.Type, &at, &e.Environment, &matched, &e.Body); err != nil {
			return EventPage{}, fmt.Errorf("events: %w", err)
		}
		if matched {
			if len(p.Events) == limit {
				p.More = true // this one starts the next page
				break
			}
			e.OccurredAt = fromMS(at)
			p.Events = append(p.Events, e)
		}
		p.Next = e.Seq
	}
	if err := rows.Err(); err != nil {
		return EventPage{}, fmt.Errorf("events: %w", err)
	}
	return p, nil
}

// IsEventPosition reports whether seq is a position in the project's
// log: 0, before its first event, the seq of one of its events, or that
// of the last event retention removed from it (a reader there has missed
// nothing, and reads on from the oldest event retained).
func (db *DB) IsEventPosition(ctx context.Context, projectID string, seq int64) (bool, error) {
	if seq == 0 {
		return true, nil
	}
	var ok bool
	if err := db.readRow(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE seq = ?1 AND project_id = ?2)
		OR ?1 = (SELECT events_pruned_through FROM projects WHERE id = ?2)`, seq, projectID).Scan(&ok); err != nil {
		return false, fmt.Errorf("event position: %w", err)
	}
	return ok, nil
}

// LastEventSeq returns the newest log position of a project (0 when empty).
func (db *DB) LastEventSeq(ctx context.Context, projectID string) (int64, error) {
	var seq sql.NullInt64
	err := db.r.QueryRowContext(ctx, `SELECT max(seq) FROM events WHERE project_id = ?`, projectID).Scan(&seq)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("last event: %w", err)
	}
	return seq.Int64, nil
}

// seqClock is t as a seq: 10 µs steps since 2026. A run that starts at
// seqClock(t) stays below the clock's seqs as long as it appends fewer
// than 100,000 events a second on average, and the seqs fit the 48 bits
// a delivery id holds (deliveryID) until the year 2109 (maxSeqClock).
func seqClock(t time.Time) int64 {
	return int64(t.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) / (10 * time.Microsecond))
}

// maxSeqClock is where Open stops counting on from the clock (seqClock in
// 2109), which leaves a delivery id's 48 bits room for 2^44 more events
// after it. A clock set that far ahead is wrong, and jumping with it would
// hand out seqs no delivery id can hold.
const maxSeqClock = 1<<48 - 1<<44

// EventsAppended is how many events were appended since Open: a counter,
// which starts again at each start (seqs jump there, see Open).
func (db *DB) EventsAppended() int64 { return db.lastEventSeq.Load() - db.seqAtOpen }

// EventsBefore returns up to limit of the matching events of f before the
// position before (0: from the end of the log), newest first, and whether
// older matching events exist (f.After and f.Scan are not used).
func (db *DB) EventsBefore(ctx context.Context, f EventFilter, before int64, limit int) ([]Event, bool, error) {
	match, args := f.match()
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := db.r.QueryContext(ctx, `SELECT seq, coalesce(inbox_id, ''), type, created_at, environment, body FROM events
		WHERE project_id = ? AND seq < ? AND `+match+` ORDER BY seq DESC LIMIT ?`, append(append([]any{f.ProjectID, before}, args...), limit+1)...)
	if err != nil {
		return nil, false, fmt.Errorf("events before: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var at int64
		if err := rows.Scan(&e.Seq, &e.InboxID, &e.Type, &at, &e.Environment, &e.Body); err != nil {
			return nil, false, fmt.Errorf("events before: %w", err)
		}
		e.OccurredAt = fromMS(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("events before: %w", err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// pruneBatch bounds one transaction of event-log retention, so it holds
// the writer only briefly between ingests.
const pruneBatch = 1000

// PruneEvents deletes the oldest events of the log created before cutoff,
// at most limit of them (their webhook deliveries and attempts go with
// them), and returns how many it deleted. It deletes a prefix of each
// project's log: it stops at the first event newer than cutoff, so the
// log stays whole from there on. A cursor that named a deleted event is
// refused from then on as invalid_cursor (IsEventPosition), the defined
// answer for a cursor older than the log.
func (db *DB) PruneEvents(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var n int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		// Each project's log is its own prefix to cut (they are keyed by
		// project, migration 0018); limit bounds them all together.
		rows, err := tx.QueryContext(ctx, `SELECT id FROM projects ORDER BY id`)
		projects, err := scanAll(rows, err, "prune events", func(r rowScanner) (id string, err error) { return id, r.Scan(&id) })
		if err != nil {
			return err
		}
		for _, p := range projects {
			if n >= limit {
				break
			}
			cut, err := pruneProjectEvents(ctx, tx, p, cutoff, limit-n)
			if err != nil {
				return err
			}
			n += cut
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	return n, nil
}

// pruneProjectEvents deletes up to limit of a project's oldest events
// created before cutoff, with their deliveries, and returns how many.
func pruneProjectEvents(ctx context.Context, tx *sql.Tx, projectID string, cutoff time.Time, limit int) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, created_at FROM events WHERE project_id = ? ORDER BY seq LIMIT ?`, projectID, limit)
	type ev struct{ seq, at int64 }
	list, err := scanAll(rows, err, "prune events", func(r rowScanner) (e ev, err error) { return e, r.Scan(&e.seq, &e.at) })
	if err != nil {
		return 0, err
	}
	var through int64
	cut := 0
	for _, e := range list {
		if e.at >= ms(cutoff) {
			break
		}
		through, cut = e.seq, cut+1
	}
	if cut == 0 {
		return 0, nil
	}
	// The events' deliveries first (their attempts follow by cascade):
	// they have no foreign key to events (migration 0017).
	if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries
		WHERE endpoint_id IN (SELECT id FROM webhook_endpoints WHERE project_id = ?) AND event_seq <= ?`, projectID, through); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE project_id = ? AND seq <= ?`, projectID, through); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE events_floor SET seq = max(seq, ?)`, through); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE projects SET events_pruned_through = max(events_pruned_through, ?) WHERE id = ?`, through, projectID); err != nil {
		return 0, err
	}
	return cut, nil
}
