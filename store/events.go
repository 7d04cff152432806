package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
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
	sqlInsertEvent = `INSERT INTO events (id, project_id, inbox_id, type, environment, body, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq`
	sqlInsertWebhookDelivery = `INSERT INTO webhook_deliveries (id, endpoint_id, event_seq, next_attempt_at, created_at)
		VALUES (?, ?, ?, ?, ?)`
)

// appendEvent writes an event to the log and a pending delivery for every
// enabled webhook endpoint that wants it, in the caller's transaction
// (SPEC §8–§9: nothing committed is left undelivered). data is completed
// with inbox_id and environment.
func (db *DB) appendEvent(ctx context.Context, tx *sql.Tx, inboxID, typ string, data map[string]any) error {
	rows, err := db.query(ctx, tx, sqlEventTargets, inboxID)
	if err != nil {
		return fmt.Errorf("find webhook endpoints: %w", err)
	}
	var project, environment string
	var targets []string
	found := false
	for rows.Next() {
		var ep, types, inboxes sql.NullString
		if err := rows.Scan(&project, &environment, &ep, &types, &inboxes); err != nil {
			rows.Close()
			return fmt.Errorf("find webhook endpoints: %w", err)
		}
		found = true
		if ep.Valid && wants(types.String, inboxes, typ, inboxID) {
			targets = append(targets, ep.String)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("find webhook endpoints: %w", err)
	}
	if !found {
		return fmt.Errorf("inbox %s: %w", inboxID, sql.ErrNoRows)
	}
	now := db.now()
	data["inbox_id"] = inboxID
	data["environment"] = environment
	id := db.newID("evt_")
	body, err := json.Marshal(envelope{ID: id, Type: typ, APIVersion: APIVersion,
		CreatedAt: now.UTC().Format("2006-01-02T15:04:05.000Z"), Data: data})
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	var seq int64
	if err := db.queryRow(ctx, tx, sqlInsertEvent, id, project, inboxID, typ, environment, body, ms(now)).Scan(&seq); err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	for _, ep := range targets {
		if _, err := db.exec(ctx, tx, sqlInsertWebhookDelivery, db.newID("dlv_"), ep, seq, ms(now), ms(now)); err != nil {
			return fmt.Errorf("queue webhook delivery: %w", err)
		}
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
}

// Events returns up to limit events after f.After, in log order.
func (db *DB) Events(ctx context.Context, f EventFilter, limit int) ([]Event, error) {
	q := `SELECT seq, coalesce(inbox_id, ''), type, body, created_at, environment FROM events WHERE project_id = ? AND seq > ?`
	args := []any{f.ProjectID, f.After}
	if len(f.Types) > 0 {
		b, _ := json.Marshal(f.Types)
		q += ` AND type IN (SELECT value FROM json_each(?))`
		args = append(args, string(b))
	}
	if f.InboxIDs != nil {
		b, _ := json.Marshal(f.InboxIDs)
		q += ` AND inbox_id IN (SELECT value FROM json_each(?))`
		args = append(args, string(b))
	}
	rows, err := db.r.QueryContext(ctx, q+` ORDER BY seq LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var at int64
		if err := rows.Scan(&e.Seq, &e.InboxID, &e.Type, &e.Body, &at, &e.Environment); err != nil {
			return nil, fmt.Errorf("events: %w", err)
		}
		e.OccurredAt = fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
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
