package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Webhook delivery statuses (SPEC §9).
const (
	WebhookPending   = "pending"
	WebhookDelivered = "delivered"
	WebhookFailed    = "failed"
)

// SecretOverlap is how long a rotated-out secret keeps signing (SPEC §9).
const SecretOverlap = 24 * time.Hour

// ErrDelivered is returned when a delivered webhook delivery is retried.
var ErrDelivered = errors.New("webhook delivery already delivered")

// errNoSecret is a caller that forgot the secret: an endpoint without one
// could never be signed for.
var errNoSecret = errors.New("no webhook secret")

// WebhookEndpoint is a registered receiver, never with its secret.
type WebhookEndpoint struct {
	ID             string
	ProjectID      string
	URL            string
	EventTypes     []string // empty = all
	InboxIDs       []string // nil = every inbox
	Enabled        bool
	Description    string
	DisabledReason string
	CreatedAt      time.Time
}

// NewWebhookEndpoint is the input of CreateWebhookEndpoint.
type NewWebhookEndpoint struct {
	URL         string
	EventTypes  []string
	InboxIDs    []string // nil = every inbox
	Description string
	Secret      string // the signing secret, required (webhook owns its format)
	Disabled    bool   // created disabled: no deliveries are queued for it until enabled
}

// WebhookEndpointPatch changes the fields that are set.
type WebhookEndpointPatch struct {
	URL         *string
	EventTypes  *[]string
	SetInboxIDs bool     // when true, InboxIDs replaces the filter
	InboxIDs    []string // nil = every inbox
	Enabled     *bool
	Description *string
}

func stringsJSON(l []string) string {
	if l == nil {
		l = []string{}
	}
	b, _ := json.Marshal(l)
	return string(b)
}

func stringsJSONOrNull(l []string) any {
	if l == nil {
		return nil
	}
	return stringsJSON(l)
}

// CreateWebhookEndpoint registers an endpoint and returns it with its
// secret, the only time the secret leaves the store. An inbox outside the
// project is ErrNotFound.
func (db *DB) CreateWebhookEndpoint(ctx context.Context, projectID string, in NewWebhookEndpoint) (WebhookEndpoint, string, error) {
	secret := in.Secret
	if secret == "" {
		return WebhookEndpoint{}, "", fmt.Errorf("create webhook endpoint: %w", errNoSecret)
	}
	now := db.now().UTC().Truncate(time.Millisecond)
	ep := WebhookEndpoint{
		// New ids are whk_ (SPEC §1); endpoints created before that keep
		// their whe_ ids, which are opaque like any other.
		ID: db.newID("whk_"), ProjectID: projectID, URL: in.URL, EventTypes: in.EventTypes,
		InboxIDs: in.InboxIDs, Enabled: !in.Disabled, Description: in.Description, CreatedAt: now,
	}
	if ep.EventTypes == nil {
		ep.EventTypes = []string{}
	}
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if err := inboxesExist(ctx, tx, projectID, in.InboxIDs); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO webhook_endpoints (id, project_id, url, event_types, inbox_ids, enabled, description, secret, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ep.ID, projectID, ep.URL, stringsJSON(ep.EventTypes), stringsJSONOrNull(ep.InboxIDs), ep.Enabled, nullIfEmpty(ep.Description), secret, ms(now))
		return err
	})
	if err != nil {
		return WebhookEndpoint{}, "", fmt.Errorf("create webhook endpoint: %w", err)
	}
	return ep, secret, nil
}

func inboxesExist(ctx context.Context, tx *sql.Tx, projectID string, ids []string) error {
	for _, id := range ids {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM inboxes WHERE id = ? AND project_id = ?`, id, projectID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("inbox %s: %w", id, ErrNotFound)
		}
	}
	return nil
}

const webhookEndpointColumns = `id, project_id, url, event_types, inbox_ids, enabled, coalesce(description, ''), coalesce(disabled_reason, ''), created_at`

func scanWebhookEndpoint(row rowScanner) (WebhookEndpoint, error) {
	var ep WebhookEndpoint
	var types string
	var inboxes sql.NullString
	var created int64
	if err := row.Scan(&ep.ID, &ep.ProjectID, &ep.URL, &types, &inboxes, &ep.Enabled, &ep.Description, &ep.DisabledReason, &created); err != nil {
		return WebhookEndpoint{}, err
	}
	if err := json.Unmarshal([]byte(types), &ep.EventTypes); err != nil {
		return WebhookEndpoint{}, fmt.Errorf("webhook endpoint %s event_types: %w", ep.ID, err)
	}
	if ep.EventTypes == nil {
		ep.EventTypes = []string{}
	}
	if inboxes.Valid {
		if err := json.Unmarshal([]byte(inboxes.String), &ep.InboxIDs); err != nil {
			return WebhookEndpoint{}, fmt.Errorf("webhook endpoint %s inbox_ids: %w", ep.ID, err)
		}
		if ep.InboxIDs == nil {
			ep.InboxIDs = []string{}
		}
	}
	ep.CreatedAt = fromMS(created)
	return ep, nil
}

// WebhookEndpoints returns the project's endpoints, oldest first.
func (db *DB) WebhookEndpoints(ctx context.Context, projectID string) ([]WebhookEndpoint, error) {
	return db.WebhookEndpointsAfter(ctx, projectID, nil, -1)
}

// WebhookEndpointsAfter returns up to limit (−1: every) endpoints of the
// project, oldest first, strictly after the position after.
func (db *DB) WebhookEndpointsAfter(ctx context.Context, projectID string, after *TimeKey, limit int) ([]WebhookEndpoint, error) {
	page, args := createdPage(after, limit, projectID)
	rows, err := db.r.QueryContext(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints WHERE project_id = ?`+page, args...)
	return scanAll(rows, err, "list webhook endpoints", scanWebhookEndpoint)
}

// GetWebhookEndpoint returns one endpoint of a project.
func (db *DB) GetWebhookEndpoint(ctx context.Context, projectID, id string) (WebhookEndpoint, error) {
	ep, err := scanWebhookEndpoint(db.r.QueryRowContext(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints
		WHERE id = ? AND project_id = ?`, id, projectID))
	if errors.Is(err, sql.ErrNoRows) {
		return WebhookEndpoint{}, fmt.Errorf("webhook endpoint %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return WebhookEndpoint{}, fmt.Errorf("webhook endpoint %s: %w", id, err)
	}
	return ep, nil
}

func getWebhookEndpointTx(ctx context.Context, tx *sql.Tx, projectID, id string) (WebhookEndpoint, error) {
	ep, err := scanWebhookEndpoint(tx.QueryRowContext(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints
		WHERE id = ? AND project_id = ?`, id, projectID))
	if errors.Is(err, sql.ErrNoRows) {
		return WebhookEndpoint{}, fmt.Errorf("webhook endpoint %s: %w", id, ErrNotFound)
	}
	return ep, err
}

// UpdateWebhookEndpoint applies a patch. Enabling an endpoint clears its
// disabled_reason; its pending deliveries resume where they were.
func (db *DB) UpdateWebhookEndpoint(ctx context.Context, projectID, id string, p WebhookEndpointPatch) (WebhookEndpoint, error) {
	var ep WebhookEndpoint
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if ep, err = getWebhookEndpointTx(ctx, tx, projectID, id); err != nil {
			return err
		}
		if p.URL != nil {
			ep.URL = *p.URL
		}
		if p.EventTypes != nil {
			ep.EventTypes = *p.EventTypes
			if ep.EventTypes == nil {
				ep.EventTypes = []string{}
			}
		}
		if p.SetInboxIDs {
			if err := inboxesExist(ctx, tx, projectID, p.InboxIDs); err != nil {
				return err
			}
			ep.InboxIDs = p.InboxIDs
		}
		if p.Description != nil {
			ep.Description = *p.Description
		}
		if p.Enabled != nil {
			if *p.Enabled {
				ep.DisabledReason = ""
			}
			ep.Enabled = *p.Enabled
		}
		_, err = tx.ExecContext(ctx, `UPDATE webhook_endpoints SET url = ?, event_types = ?, inbox_ids = ?, enabled = ?, description = ?,
			disabled_reason = ? WHERE id = ?`,
			ep.URL, stringsJSON(ep.EventTypes), stringsJSONOrNull(ep.InboxIDs), ep.Enabled, nullIfEmpty(ep.Description),
			nullIfEmpty(ep.DisabledReason), ep.ID)
		return err
	})
	if err != nil {
		return WebhookEndpoint{}, fmt.Errorf("update webhook endpoint: %w", err)
	}
	return ep, nil
}

// DeleteWebhookEndpoint deletes an endpoint with its deliveries and
// attempts (ON DELETE CASCADE).
func (db *DB) DeleteWebhookEndpoint(ctx context.Context, projectID, id string) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE id = ? AND project_id = ?`, id, projectID)
		if err != nil {
			return fmt.Errorf("delete webhook endpoint: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("delete webhook endpoint %s: %w", id, ErrNotFound)
		}
		return nil
	})
}

// RotateWebhookSecret replaces an endpoint's secret with secret and
// returns it. The old secret keeps signing for SecretOverlap, so receivers
// can switch without losing a delivery.
func (db *DB) RotateWebhookSecret(ctx context.Context, projectID, id, secret string) (WebhookEndpoint, string, error) {
	if secret == "" {
		return WebhookEndpoint{}, "", fmt.Errorf("rotate webhook secret: %w", errNoSecret)
	}
	var ep WebhookEndpoint
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if ep, err = getWebhookEndpointTx(ctx, tx, projectID, id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE webhook_endpoints SET previous_secret = secret, previous_until = ?, secret = ? WHERE id = ?`,
			ms(db.now().Add(SecretOverlap)), secret, id)
		return err
	})
	if err != nil {
		return WebhookEndpoint{}, "", fmt.Errorf("rotate webhook secret: %w", err)
	}
	return ep, secret, nil
}

// WebhookDeliveryClaim is a delivery the worker took for one attempt.
// The webhook queue is named as the mail queue (delivery.go) with Webhook
// before Delivery: ClaimWebhookDeliveries, ReleaseWebhookDeliveryClaims,
// NextWebhookDeliveryAt, RecordWebhookDeliveries.
type WebhookDeliveryClaim struct {
	DeliveryID string
	EndpointID string
	URL        string
	EventID    string
	Body       []byte   // the envelope exactly as stored at enqueue
	Secrets    []string // the current secret, then the previous one while it still signs
	Attempt    int      // this attempt's number, from 1
}

// ClaimWebhookDeliveries takes up to limit due deliveries of enabled
// endpoints, at most perEndpoint−busy[endpoint] of each endpoint, and
// records the attempt before anything is sent: attempt_count goes up and
// the delivery is due again only after lease. A worker that dies
// mid-attempt therefore retries after the lease, never in a storm. busy
// counts the worker's requests in flight by endpoint, so one endpoint's
// backlog never takes another's turn.
//
// An endpoint's due deliveries are those waiting for a retry (the due
// index) and the new ones, found in key order past its claimed_seq
// (migration 0017); the oldest due go first.
func (db *DB) ClaimWebhookDeliveries(ctx context.Context, limit, perEndpoint int, busy map[string]int, lease time.Duration) ([]WebhookDeliveryClaim, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []WebhookDeliveryClaim
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		endpoints, err := db.claimableEndpoints(ctx, tx, ms(now), perEndpoint, busy)
		if err != nil {
			return err
		}
		var due []dueDelivery
		for _, ep := range endpoints {
			d, err := db.endpointDue(ctx, tx, ep, ms(now))
			if err != nil {
				return err
			}
			due = append(due, d...)
		}
		slices.SortFunc(due, func(a, b dueDelivery) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.endpoint.id, b.endpoint.id), cmp.Compare(a.seq, b.seq))
		})
		due = due[:min(len(due), limit)]
		for _, d := range due {
			c := WebhookDeliveryClaim{EndpointID: d.endpoint.id, URL: d.endpoint.url, Secrets: d.endpoint.secrets}
			var created int64
			var legacy sql.NullString
			if err := tx.StmtContext(ctx, db.ws.claimWebhookDelivery).QueryRowContext(ctx,
				ms(now.Add(lease)), d.endpoint.id, d.seq).Scan(&c.Attempt, &created, &legacy); err != nil {
				return fmt.Errorf("claim webhook delivery: %w", err)
			}
			c.DeliveryID = formatDeliveryID(created, d.seq, d.endpoint.id, legacy)
			if err := tx.StmtContext(ctx, db.ws.claimedEvent).QueryRowContext(ctx, d.endpoint.projectID, d.seq).Scan(&c.EventID, &c.Body); err != nil {
				return fmt.Errorf("claim webhook delivery %s: %w", c.DeliveryID, err)
			}
			out = append(out, c)
		}
		return db.advanceClaimedSeq(ctx, tx, due)
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	return out, nil
}

// sqlNewDelivery is the condition that a delivery of the endpoint (an SQL
// expression) is new, due at created_at and not in the due index
// (migration 0017): past claimed (the endpoint's claimed_seq), never
// claimed nor retried.
func sqlNewDelivery(endpoint, claimed string) string {
	return `endpoint_id = ` + endpoint + ` AND event_seq > ` + claimed + ` AND next_attempt_at IS NULL AND status = 'pending'`
}

// The webhook queue's statements, prepared on the writer (db.ws): the
// worker runs them for every claim and every recorded attempt.
var (
	sqlClaimableEndpoints = `SELECT id, project_id, url, secret, previous_secret, previous_until, claimed_seq
		FROM webhook_endpoints WHERE enabled = 1 ORDER BY id`
	sqlEndpointDue = `SELECT event_seq, at, new FROM (
			SELECT * FROM (SELECT event_seq, next_attempt_at AS at, 0 AS new FROM webhook_deliveries
				WHERE endpoint_id = ?1 AND next_attempt_at <= ?2 ORDER BY next_attempt_at LIMIT ?3)
			UNION ALL
			SELECT * FROM (SELECT event_seq, created_at, 1 FROM webhook_deliveries
				WHERE ` + sqlNewDelivery("?1", "?4") + ` ORDER BY event_seq LIMIT ?3))
		ORDER BY at, event_seq LIMIT ?3`
	sqlClaimWebhookDelivery = `UPDATE webhook_deliveries SET attempt_count = attempt_count + 1, next_attempt_at = ?
		WHERE endpoint_id = ? AND event_seq = ? RETURNING attempt_count, created_at, legacy_id`
	sqlClaimedEvent      = `SELECT id, body FROM events WHERE project_id = ? AND seq = ?`
	sqlAdvanceClaimedSeq = `UPDATE webhook_endpoints SET claimed_seq = min(?3, coalesce((SELECT min(event_seq) - 1
			FROM webhook_deliveries WHERE ` + sqlNewDelivery("?1", "?2") + `), ?3))
		WHERE id = ?1`
	sqlRecordWebhookStatus  = `UPDATE webhook_deliveries SET status = ?, next_attempt_at = ? WHERE endpoint_id = ? AND event_seq = ? AND status != 'delivered'`
	sqlInsertWebhookAttempt = `INSERT INTO webhook_attempts (endpoint_id, event_seq, at, status_code, duration_ms, response_excerpt, error)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
)

// claimEndpoint is an enabled endpoint with room for more attempts.
type claimEndpoint struct {
	id, url    string
	projectID  string
	secrets    []string
	room       int
	claimedSeq int64
}

// dueDelivery is a delivery ClaimWebhookDeliveries may take.
type dueDelivery struct {
	endpoint *claimEndpoint
	seq      int64
	at       int64 // when it fell due
	isNew    bool  // found past claimed_seq
}

func (db *DB) claimableEndpoints(ctx context.Context, tx *sql.Tx, now int64, perEndpoint int, busy map[string]int) ([]*claimEndpoint, error) {
	rows, err := tx.StmtContext(ctx, db.ws.claimableEndpoints).QueryContext(ctx)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*claimEndpoint
	for rows.Next() {
		ep := &claimEndpoint{}
		var secret string
		var prev sql.NullString
		var until sql.NullInt64
		if err := rows.Scan(&ep.id, &ep.projectID, &ep.url, &secret, &prev, &until, &ep.claimedSeq); err != nil {
			return nil, err
		}
		ep.secrets = []string{secret}
		if prev.Valid && until.Valid && until.Int64 > now {
			ep.secrets = append(ep.secrets, prev.String)
		}
		if ep.room = perEndpoint - busy[ep.id]; ep.room > 0 {
			out = append(out, ep)
		}
	}
	return out, rows.Err()
}

// endpointDue returns up to ep.room of the endpoint's deliveries due at
// now, the oldest due first: those waiting for a retry or a lease to end
// and the new ones.
func (db *DB) endpointDue(ctx context.Context, tx *sql.Tx, ep *claimEndpoint, now int64) ([]dueDelivery, error) {
	rows, err := tx.StmtContext(ctx, db.ws.endpointDue).QueryContext(ctx, ep.id, now, ep.room, ep.claimedSeq)
	return scanAll(rows, err, "due webhook deliveries", func(r rowScanner) (d dueDelivery, err error) {
		d.endpoint = ep
		return d, r.Scan(&d.seq, &d.at, &d.isNew)
	})
}

// advanceClaimedSeq moves each endpoint's claimed_seq over the new
// deliveries just claimed, up to the first one still new (its turn went
// to an older delivery). One claimed beyond such a gap is not taken
// again: it has its next_attempt_at now.
func (db *DB) advanceClaimedSeq(ctx context.Context, tx *sql.Tx, claimed []dueDelivery) error {
	through := map[*claimEndpoint]int64{}
	for _, d := range claimed {
		if d.isNew {
			through[d.endpoint] = max(through[d.endpoint], d.seq)
		}
	}
	for ep, last := range through {
		if _, err := tx.StmtContext(ctx, db.ws.advanceClaimedSeq).ExecContext(ctx, ep.id, ep.claimedSeq, last); err != nil {
			return fmt.Errorf("advance claimed_seq: %w", err)
		}
	}
	return nil
}

// formatDeliveryID is the id of the delivery of event seq to an
// endpoint: the one it was given before migration 0017, else the one
// made from its key.
func formatDeliveryID(createdMS, seq int64, endpointID string, legacy sql.NullString) string {
	if legacy.Valid {
		return legacy.String
	}
	return deliveryID(createdMS, seq, endpointID)
}

// ReleaseWebhookDeliveryClaims makes due at once the deliveries a stopped
// process had claimed but not finished (more attempts counted than
// recorded). Only one process works the queue, so at start every such
// claim is orphaned.
func (db *DB) ReleaseWebhookDeliveryClaims(ctx context.Context) error {
	_, err := db.w.ExecContext(ctx, `UPDATE webhook_deliveries SET next_attempt_at = ?
		WHERE next_attempt_at IS NOT NULL AND status = 'pending' AND attempt_count > (SELECT count(*) FROM webhook_attempts a
			WHERE a.endpoint_id = webhook_deliveries.endpoint_id AND a.event_seq = webhook_deliveries.event_seq)`,
		ms(db.now()))
	if err != nil {
		return fmt.Errorf("release webhook delivery claims: %w", err)
	}
	return nil
}

// noDue stands for "nothing due" in NextWebhookDeliveryAt's query.
const noDue = 1 << 62

// NextWebhookDeliveryAt returns when the earliest delivery of an enabled
// endpoint not in full (busy[endpoint] ≥ perEndpoint) is due: its first
// retry, or its first new delivery (due when it was queued).
func (db *DB) NextWebhookDeliveryAt(ctx context.Context, perEndpoint int, busy map[string]int) (time.Time, bool, error) {
	var full []string
	for ep, n := range busy {
		if n >= perEndpoint {
			full = append(full, ep)
		}
	}
	var next sql.NullInt64
	err := db.readRow(ctx, `SELECT min(min(
			coalesce((SELECT min(d.next_attempt_at) FROM webhook_deliveries d
				WHERE d.endpoint_id = e.id AND d.next_attempt_at IS NOT NULL), ?1),
			coalesce((SELECT d.created_at FROM webhook_deliveries d
				WHERE `+sqlNewDelivery("e.id", "e.claimed_seq")+` ORDER BY d.event_seq LIMIT 1), ?1)))
		FROM webhook_endpoints e WHERE e.enabled = 1 AND e.id NOT IN (SELECT value FROM json_each(?2))`,
		noDue, stringsJSON(full)).Scan(&next)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next webhook delivery: %w", err)
	}
	if !next.Valid || next.Int64 == noDue {
		return time.Time{}, false, nil
	}
	return fromMS(next.Int64), true, nil
}

// WebhookAttempt is one recorded attempt.
type WebhookAttempt struct {
	At              time.Time
	StatusCode      int // 0: no HTTP answer
	Duration        time.Duration
	ResponseExcerpt string
	Error           string
}

// WebhookDeliveryResult is the outcome of one attempt and what follows
// from it.
type WebhookDeliveryResult struct {
	EndpointID  string
	DeliveryID  string
	Attempt     WebhookAttempt
	Status      string    // WebhookDelivered, WebhookPending (retry at NextAttempt) or WebhookFailed
	NextAttempt time.Time // for WebhookPending
	// DisableReason, when set, disables the delivery's endpoint (a 410)
	// if it still has URL, the one that answered: a late answer from
	// the URL an endpoint was moved away from does not disable it.
	DisableReason string
	URL           string
}

// MaxResponseExcerpt is how much of a response (or error) an attempt keeps.
const MaxResponseExcerpt = 1024

// RecordWebhookDeliveries stores attempts and the deliveries' new
// statuses in one transaction (one fsync for a burst of attempts). A
// result whose delivery is gone (its endpoint was deleted) is skipped. A
// delivery a receiver took stays delivered: a failure from another of
// its attempts (a manual retry while one was out) is only an attempt.
func (db *DB) RecordWebhookDeliveries(ctx context.Context, results []WebhookDeliveryResult) error {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		for _, o := range results {
			if err := db.recordWebhookDeliveryTx(ctx, tx, o); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record webhook deliveries: %w", err)
	}
	return nil
}

// recordWebhookDeliveryTx stores one attempt and its delivery's status in
// tx; a delivery that is gone is ErrNotFound.
func (db *DB) recordWebhookDeliveryTx(ctx context.Context, tx *sql.Tx, o WebhookDeliveryResult) error {
	var next any
	switch o.Status {
	case WebhookPending:
		next = ms(o.NextAttempt)
	case WebhookDelivered, WebhookFailed:
	default:
		return fmt.Errorf("record webhook attempt: bad status %q", o.Status)
	}
	seq, err := findWebhookDelivery(ctx, tx, o.EndpointID, o.DeliveryID)
	if err != nil {
		return err
	}
	a := o.Attempt
	if _, err := tx.StmtContext(ctx, db.ws.recordWebhookStatus).ExecContext(ctx, o.Status, next, o.EndpointID, seq); err != nil {
		return err
	}
	if _, err := tx.StmtContext(ctx, db.ws.insertWebhookAttempt).ExecContext(ctx, o.EndpointID, seq, ms(a.At), nullIfZero(a.StatusCode), a.Duration.Milliseconds(),
		nullIfEmpty(excerpt(a.ResponseExcerpt)), nullIfEmpty(excerpt(a.Error))); err != nil {
		return err
	}
	if o.DisableReason != "" {
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ? WHERE id = ? AND url = ?`,
			o.DisableReason, o.EndpointID, o.URL); err != nil {
			return err
		}
	}
	return nil
}

// findWebhookDelivery returns the event seq of an endpoint's delivery
// deliveryID (formatDeliveryID), or ErrNotFound.
func findWebhookDelivery(ctx context.Context, q queryer, endpointID, deliveryID string) (int64, error) {
	var seq, created int64
	var legacy sql.NullString
	err := sql.ErrNoRows
	if s, ok := parseDeliveryID(deliveryID, endpointID); ok {
		err = q.QueryRowContext(ctx, `SELECT event_seq, created_at, legacy_id FROM webhook_deliveries WHERE endpoint_id = ? AND event_seq = ?`,
			endpointID, s).Scan(&seq, &created, &legacy)
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = q.QueryRowContext(ctx, `SELECT event_seq, created_at, legacy_id FROM webhook_deliveries WHERE legacy_id = ? AND endpoint_id = ?`,
			deliveryID, endpointID).Scan(&seq, &created, &legacy)
	}
	if err == nil && formatDeliveryID(created, seq, endpointID, legacy) != deliveryID {
		err = sql.ErrNoRows // its key, but not an id it was given
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("webhook delivery %s: %w", deliveryID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("webhook delivery %s: %w", deliveryID, err)
	}
	return seq, nil
}

// excerpt keeps the first MaxResponseExcerpt bytes, cut at a rune
// boundary, as valid UTF-8 (it is shown in JSON).
func excerpt(s string) string {
	if len(s) > MaxResponseExcerpt {
		i := MaxResponseExcerpt
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// WebhookDelivery is one event's delivery to one endpoint.
type WebhookDelivery struct {
	ID            string
	EndpointID    string
	EventID       string
	EventType     string
	Status        string
	AttemptCount  int
	NextAttemptAt *time.Time
	CreatedAt     time.Time
	Attempts      []WebhookAttempt // only from GetWebhookDelivery
}

const webhookDeliveryColumns = `d.endpoint_id, d.event_seq, d.legacy_id, ev.id, ev.type, d.status, d.attempt_count,
	CASE WHEN d.status = 'pending' THEN coalesce(d.next_attempt_at, d.created_at) END, d.created_at`

const webhookDeliveryFrom = ` FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
	JOIN events ev ON ev.project_id = e.project_id AND ev.seq = d.event_seq`

func scanWebhookDelivery(row rowScanner) (WebhookDelivery, error) {
	var d WebhookDelivery
	var seq, created int64
	var legacy sql.NullString
	var next sql.NullInt64
	if err := row.Scan(&d.EndpointID, &seq, &legacy, &d.EventID, &d.EventType, &d.Status, &d.AttemptCount, &next, &created); err != nil {
		return WebhookDelivery{}, err
	}
	d.ID = formatDeliveryID(created, seq, d.EndpointID, legacy)
	if next.Valid {
		t := fromMS(next.Int64)
		d.NextAttemptAt = &t
	}
	d.CreatedAt = fromMS(created)
	return d, nil
}

// WebhookDeliveries returns up to limit deliveries of an endpoint, newest
// first (by event), strictly after the position after (whose ID is the
// last delivery of the page before).
func (db *DB) WebhookDeliveries(ctx context.Context, projectID, endpointID string, after *TimeKey, limit int) ([]WebhookDelivery, error) {
	q := `SELECT ` + webhookDeliveryColumns + webhookDeliveryFrom + ` WHERE d.endpoint_id = ? AND e.project_id = ?`
	args := []any{endpointID, projectID}
	if after != nil {
		seq, err := findWebhookDelivery(ctx, db.r, endpointID, after.ID)
		if errors.Is(err, ErrNotFound) {
			// Retention deleted it, and with it every older delivery
			// (PruneEvents deletes a prefix of the log).
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		q += ` AND d.event_seq < ?`
		args = append(args, seq)
	}
	rows, err := db.r.QueryContext(ctx, q+` ORDER BY d.event_seq DESC LIMIT ?`, append(args, limit)...)
	return scanAll(rows, err, "webhook deliveries", scanWebhookDelivery)
}

// GetWebhookDelivery returns one delivery of an endpoint with its
// attempts, oldest first.
func (db *DB) GetWebhookDelivery(ctx context.Context, projectID, endpointID, deliveryID string) (WebhookDelivery, error) {
	// One read transaction: the delivery and its attempts from the same
	// snapshot, never a status older than the attempts listed.
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return WebhookDelivery{}, fmt.Errorf("webhook delivery %s: %w", deliveryID, err)
	}
	defer tx.Rollback()
	seq, err := findWebhookDelivery(ctx, tx, endpointID, deliveryID)
	if err != nil {
		return WebhookDelivery{}, err
	}
	d, err := scanWebhookDelivery(tx.QueryRowContext(ctx, `SELECT `+webhookDeliveryColumns+webhookDeliveryFrom+`
		WHERE d.endpoint_id = ? AND d.event_seq = ? AND e.project_id = ?`, endpointID, seq, projectID))
	if errors.Is(err, sql.ErrNoRows) {
		return WebhookDelivery{}, fmt.Errorf("webhook delivery %s: %w", deliveryID, ErrNotFound)
	}
	if err != nil {
		return WebhookDelivery{}, fmt.Errorf("webhook delivery %s: %w", deliveryID, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT at, coalesce(status_code, 0), coalesce(duration_ms, 0), coalesce(response_excerpt, ''),
		coalesce(error, '') FROM webhook_attempts WHERE endpoint_id = ? AND event_seq = ? ORDER BY id`, endpointID, seq)
	if err != nil {
		return WebhookDelivery{}, fmt.Errorf("webhook attempts: %w", err)
	}
	defer rows.Close()
	d.Attempts = []WebhookAttempt{}
	for rows.Next() {
		var a WebhookAttempt
		var at, dur int64
		if err := rows.Scan(&at, &a.StatusCode, &dur, &a.ResponseExcerpt, &a.Error); err != nil {
			return WebhookDelivery{}, fmt.Errorf("webhook attempts: %w", err)
		}
		a.At, a.Duration = fromMS(at), time.Duration(dur)*time.Millisecond
		d.Attempts = append(d.Attempts, a)
	}
	return d, rows.Err()
}

// RetryWebhookDelivery makes a pending or failed delivery due now (status
// pending); a delivered one is ErrDelivered. The attempt count goes on:
// a delivery that had used up the schedule gets one more attempt.
func (db *DB) RetryWebhookDelivery(ctx context.Context, projectID, endpointID, deliveryID string) (WebhookDelivery, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		seq, err := findWebhookDelivery(ctx, tx, endpointID, deliveryID)
		if err != nil {
			return err
		}
		var status string
		err = tx.QueryRowContext(ctx, `SELECT d.status FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.endpoint_id = ? AND d.event_seq = ? AND e.project_id = ?`, endpointID, seq, projectID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("webhook delivery %s: %w", deliveryID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if status == WebhookDelivered {
			return ErrDelivered
		}
		_, err = tx.ExecContext(ctx, `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ? WHERE endpoint_id = ? AND event_seq = ?`,
			ms(db.now()), endpointID, seq)
		return err
	})
	if err != nil {
		return WebhookDelivery{}, fmt.Errorf("retry webhook delivery: %w", err)
	}
	return db.GetWebhookDelivery(ctx, projectID, endpointID, deliveryID)
}

// WebhookDeliveryCounts counts the webhook queue's rows by status
// (pending is its depth).
func (db *DB) WebhookDeliveryCounts(ctx context.Context) (map[string]int64, error) {
	return db.countBy(ctx, `SELECT status, count(*) FROM webhook_deliveries GROUP BY status`)
}
