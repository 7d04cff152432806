package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// openFixtureV13 copies testdata/v13.db (a database made by inboxd at
// schema version 13, testdata/v13gen_test.go.txt) into a temporary
// directory and returns its path.
func openFixtureV13(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/v13.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "inboxd.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// undoMigration0013 turns a database of schema 13 back into one of 12:
// messages_fts keyed by messages.rowid, no scope, no search_keys.
var undoMigration0013 = []string{`DROP TABLE search_keys`, `DROP TABLE messages_fts`,
	`CREATE VIRTUAL TABLE messages_fts USING fts5(subject, addresses, body, content = '', contentless_delete = 1,
		tokenize = 'unicode61 remove_diacritics 2')`,
	`INSERT INTO messages_fts (rowid, subject, addresses, body) SELECT rowid, subject, '', 'migrated' FROM messages`}

// dumpRows runs q (rows of a key and a value) and returns them by key.
func dumpRows(t *testing.T, db *sql.DB, q string) map[string]string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		if _, dup := out[k.String]; dup {
			t.Fatalf("%s: key %q twice", q, k.String)
		}
		out[k.String] = v.String
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The columns both schemas share, as one JSON value per message.
const dumpMessageCols = `json_array(m.inbox_id, m.thread_id, m.sequence, m.direction, m.state, m.simulated, m.echo, m.subject,
	m.preview, m.from_json, m.to_json, m.cc_json, m.bcc_json, m.reply_to_json, m.rfc_message_id, m.rfc_message_id_generated,
	m.in_reply_to_json, m.references_json, m.thread_match, m.address_tag, m.parse_error, hex(m.raw_sha256), m.raw_size,
	m.created_at, m.deleted_at, m.message_id_confirmed, m.approval_id, m.rowid`

// The tables migration 0014 does not touch, dumped the same way before and
// after it.
var unchangedDumps = map[string]string{
	"threads": `SELECT id, json_array(inbox_id, subject, preview, message_count, last_sequence, last_message_at,
		last_message_direction, created_at, has_attachments) FROM threads`,
	"attachments": `SELECT id, json_array(message_id, position, filename, content_type, disposition, content_id, bytes,
		scan_status, hex(data)) FROM attachments`,
	"deliveries": `SELECT id, json_array(message_id, email, type, route, status, attempts, next_attempt_at) FROM deliveries`,
	"webhook_deliveries": `SELECT id, json_array(endpoint_id, event_seq, status, attempt_count, next_attempt_at, created_at)
		FROM webhook_deliveries`,
	"missing_parents":   `SELECT inbox_id || ' ' || rfc_message_id, thread_id FROM missing_parents`,
	"deferred_messages": `SELECT id, json_array(inbox_id, hex(raw), hex(trace), envelope, received_at) FROM deferred_messages`,
	"search_keys":       `SELECT key, message FROM search_keys`,
	"events":            `SELECT seq, json_array(id, project_id, inbox_id, type, environment, hex(body), created_at) FROM events`,
}

// dumpsSince0017 are unchangedDumps' queries on the tables migration 0017
// rebuilt: a delivery made before it keeps its id as legacy_id.
var dumpsSince0017 = map[string]string{
	"webhook_deliveries": `SELECT legacy_id, json_array(endpoint_id, event_seq, status, attempt_count, next_attempt_at, created_at)
		FROM webhook_deliveries`,
}

// Migration 0014 moves bodies, envelopes, raw bytes and Message-IDs into
// their new places and rebuilds events: on a database inboxd made at
// schema 13, every message (metadata, envelope, body, raw bytes, ids),
// thread, attachment, event, delivery and deferred message is the same
// after it, the copies are logged, and the migrated data serves: search,
// threading a new reply by a migrated Message-ID and by an alias, and
// event seqs that go on from the old ones.
func TestMigration0014(t *testing.T) {
	ctx := context.Background()
	path := openFixtureV13(t)
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var version int
	if err := old.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != 13 {
		t.Fatalf("fixture at schema %d (%v), want 13", version, err)
	}
	raw := `hex(coalesce(r.trace, x'')) || ':' || hex(r.data) || ':' ||
		coalesce((SELECT group_concat(hex(data), '') FROM (SELECT data FROM raw_chunks c WHERE c.message_id = m.id ORDER BY seq)), '')`
	beforeMsgs := dumpRows(t, old, `SELECT m.id, `+dumpMessageCols+`,
		e.mail_from, e.rcpt_to, e.remote_ip, e.helo, e.tls, e.auth_user, `+raw+`)
		FROM messages m LEFT JOIN envelopes e ON e.message_id = m.id LEFT JOIN raw_messages r ON r.message_id = m.id`)
	beforeIDs := dumpRows(t, old, `SELECT message_id, group_concat(inbox_id || ' ' || rfc_message_id, ',') FROM
		(SELECT * FROM message_ids ORDER BY message_id, inbox_id, rfc_message_id) GROUP BY message_id`)
	beforeBodies := map[string]Body{}
	{
		rows, err := old.Query(`SELECT message_id, text, html, extracted_text, packed FROM bodies`)
		if err != nil {
			t.Fatal(err)
		}
		bp := newBodyPacker()
		legacy := 0
		for rows.Next() {
			var id string
			var text, html, extracted sql.NullString
			var packed []byte
			if err := rows.Scan(&id, &text, &html, &extracted, &packed); err != nil {
				t.Fatal(err)
			}
			b := Body{ExtractedText: extracted.String}
			if text.Valid {
				b.Text = &text.String
			}
			if html.Valid {
				b.HTML = &html.String
			}
			if packed != nil {
				if b, err = bp.unpack(packed); err != nil {
					t.Fatal(err)
				}
			} else {
				legacy++
			}
			beforeBodies[id] = b
		}
		rows.Close()
		if legacy == 0 {
			t.Fatal("the fixture has no body from before migration 0007")
		}
	}
	before := map[string]map[string]string{}
	for name, q := range unchangedDumps {
		before[name] = dumpRows(t, old, q)
	}
	var lastSeq int64
	if err := old.QueryRow(`SELECT seq FROM sqlite_sequence WHERE name = 'events'`).Scan(&lastSeq); err != nil {
		t.Fatal(err)
	}
	old.Close()
	if len(beforeMsgs) < 100 || len(before["webhook_deliveries"]) == 0 || len(before["deferred_messages"]) == 0 ||
		len(before["attachments"]) == 0 || len(beforeIDs) <= len(beforeMsgs)-1 {
		t.Fatalf("the fixture is thinner than this test expects: %d messages, %d ids, %d deliveries", len(beforeMsgs), len(beforeIDs), len(before["webhook_deliveries"]))
	}

	defer func(n int64) { batchRows = n }(batchRows)
	batchRows = 40 // several batches over the fixture's rows
	var logs bytes.Buffer
	// Compared before the writer runs: it stores the deferred message
	// (its ten minutes are long over) as soon as it starts.
	db, err := Open(ctx, Options{Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var inbox string
	if err := db.r.QueryRow(`SELECT id FROM inboxes WHERE address = 'inbox@localhost'`).Scan(&inbox); err != nil {
		t.Fatal(err)
	}
	if v, err := db.SchemaVersion(ctx); err != nil || v < 14 {
		t.Fatalf("schema %d (%v)", v, err)
	}
	for _, want := range []string{"schema migration started", fmt.Sprintf("copy=messages_new rows_of_messages=%d of=%d", len(beforeMsgs), len(beforeMsgs)),
		"copy=contents rows_of_messages=", "copy=events_new rows_of_events=", "schema migration done"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}

	afterMsgs := dumpRows(t, db.r, `SELECT m.id, `+dumpMessageCols+`,
		m.env_mail_from, m.env_rcpt_to, m.env_remote_ip, m.env_helo, m.env_tls, m.env_auth_user, `+raw+`)
		FROM messages m LEFT JOIN contents r ON r.message = m.pk`)
	compareDumps(t, "messages", beforeMsgs, afterMsgs)
	afterIDs := dumpRows(t, db.r, `SELECT id, group_concat(x, ',') FROM (SELECT id, x FROM
		(SELECT id, inbox_id || ' ' || rfc_message_id AS x FROM messages
		UNION ALL SELECT m.id, a.inbox_id || ' ' || a.rfc_message_id FROM message_aliases a JOIN messages m ON m.pk = a.message)
		ORDER BY id, x) GROUP BY id`)
	compareDumps(t, "message ids", beforeIDs, afterIDs)
	for name, q := range unchangedDumps {
		if q2, ok := dumpsSince0017[name]; ok {
			q = q2
		}
		compareDumps(t, name, before[name], dumpRows(t, db.r, q))
	}
	for id, want := range beforeBodies {
		got, err := db.GetBody(ctx, id)
		if err != nil {
			t.Fatalf("body of %s: %v", id, err)
		}
		if fmt.Sprint(deref(got.Text), got.Text == nil, deref(got.HTML), got.HTML == nil, got.ExtractedText) !=
			fmt.Sprint(deref(want.Text), want.Text == nil, deref(want.HTML), want.HTML == nil, want.ExtractedText) {
			t.Errorf("body of %s: %+v, want %+v", id, got, want)
		}
	}
	// A dumped message's columns: 0 inbox_id, 3 direction, 24 deleted_at.
	beforeCols := map[string][]any{}
	for id, v := range beforeMsgs {
		var cols []any
		if err := json.Unmarshal([]byte(v), &cols); err != nil {
			t.Fatal(err)
		}
		beforeCols[id] = cols
	}
	for id, cols := range beforeCols {
		var buf bytes.Buffer
		if err := db.WriteRaw(ctx, &buf, id); err != nil && cols[24] == nil {
			t.Fatalf("raw of %s: %v", id, err)
		}
		if cols[3] == "inbound" {
			if _, err := db.Envelope(ctx, id); err != nil {
				t.Errorf("envelope of %s: %v", id, err)
			}
		}
	}
	var integrity string
	if err := db.r.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity check: %s %v", integrity, err)
	}
	if fk := dumpRows(t, db.r, `SELECT "table" || rowid, parent FROM pragma_foreign_key_check`); len(fk) != 0 {
		t.Fatalf("foreign keys: %v", fk)
	}

	db.Close()

	// The migrated data serves. Search finds every live message of the
	// inbox with the word, as it did.
	db, _, stop := openRunning(t, Options{Path: path})
	defer stop()
	want := 0
	for id, cols := range beforeCols {
		if strings.Contains(beforeBodies[id].ExtractedText, "kubernetes") && cols[0] == inbox && cols[3] == "inbound" && cols[24] == nil {
			want++
		}
	}
	q, _ := ParseQuery("kubernetes")
	if page, err := db.InboxPage(ctx, inbox, q, "", nil, 500); err != nil || len(page) != want || want == 0 {
		t.Errorf("search after the migration: %d messages (%v), want %d", len(page), err, want)
	}
	// A reply to a migrated Message-ID and one to a relay's alias thread
	// where their parents are.
	threadOf := func(rfc string) string {
		var thread string
		if err := db.r.QueryRow(`SELECT thread_id FROM messages WHERE rfc_message_id = ?
			UNION SELECT m.thread_id FROM message_aliases a JOIN messages m ON m.pk = a.message WHERE a.rfc_message_id = ?`, rfc, rfc).
			Scan(&thread); err != nil {
			t.Fatal(rfc, err)
		}
		return thread
	}
	for _, parent := range []string{"m30@fixture.test", "relay-final@example.com"} {
		d, err := db.Ingest(ctx, incoming(inbox, "Message-ID: <after-"+parent+">\r\nIn-Reply-To: <"+parent+">\r\nSubject: Re\r\n\r\nafter\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		if d[0].ThreadID != threadOf(parent) {
			t.Errorf("reply to %s: thread %s, want %s", parent, d[0].ThreadID, threadOf(parent))
		}
	}
	// The fixture's clock stopped in November 2026; the new events are
	// today's, and every one of them comes after the fixture's last seq.
	var fresh, above int
	if err := db.r.QueryRow(`SELECT count(*) FILTER (WHERE created_at > ?), count(*) FILTER (WHERE seq > ?) FROM events`,
		ms(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)), lastSeq).Scan(&fresh, &above); err != nil || fresh < 2 || fresh != above {
		t.Errorf("events after the migration: %d new, %d above seq %d (%v)", fresh, above, lastSeq, err)
	}
}

func compareDumps(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Errorf("%s: %d rows before, %d after", what, len(before), len(after))
	}
	bad := 0
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if after[k] != before[k] && bad < 3 {
			t.Errorf("%s %s:\nbefore %s\nafter  %s", what, k, before[k], after[k])
			bad++
		}
	}
}

// Event seqs are never handed out twice, even once retention has emptied
// the log: a cursor from before still points before every new event.
func TestEventSeqNeverReused(t *testing.T) {
	ctx := context.Background()
	db, b := openTest(t)
	for i := range 3 {
		if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, fmt.Sprintf("Subject: %d\r\n\r\nx\r\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	last, err := db.LastEventSeq(ctx, b.ProjectID)
	if err != nil || last == 0 {
		t.Fatalf("last seq %d (%v)", last, err)
	}
	if n, err := db.PruneEvents(ctx, db.Now().Add(time.Hour), 100); err != nil || n == 0 {
		t.Fatalf("pruned %d (%v)", n, err)
	}
	if s, _ := db.LastEventSeq(ctx, b.ProjectID); s != 0 {
		t.Fatalf("log not empty: last seq %d", s)
	}
	if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Subject: after\r\n\r\nx\r\n")); err != nil {
		t.Fatal(err)
	}
	if s, _ := db.LastEventSeq(ctx, b.ProjectID); s != last+1 {
		t.Errorf("first event after an emptied log: seq %d, want %d", s, last+1)
	}
	if n := db.EventsAppended(); n != 4 {
		t.Errorf("events appended %d, want 4", n)
	}
}

// A migration that copies tables is refused, with the database left as it
// was, when the disk cannot hold the copies.
func TestMigrationNeedsRoomToCopy(t *testing.T) {
	ctx := context.Background()
	path := openFixtureV13(t)
	defer func(f func(string) (uint64, bool)) { diskFree = f }(diskFree)
	diskFree = func(string) (uint64, bool) { return 1 << 20, true }
	_, err := Open(ctx, Options{Path: path})
	if err == nil || !strings.Contains(err.Error(), "not enough disk space to migrate") || !strings.Contains(err.Error(), "1.0 MB are free") {
		t.Fatalf("Open with 1 MB free: %v", err)
	}
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	var version, bodies int
	if err := old.QueryRow(`SELECT (SELECT user_version FROM pragma_user_version), count(*) FROM bodies`).Scan(&version, &bodies); err != nil || version != 13 || bodies == 0 {
		t.Fatalf("after the refusal: schema %d, %d bodies (%v)", version, bodies, err)
	}
	diskFree = func(string) (uint64, bool) { return 1 << 40, true }
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// Migration 0017 rekeys webhook deliveries by (endpoint, event): every
// delivery queued before it keeps its id, status, schedule and attempts,
// is read and retried by that id and listed in order with the ones queued
// after it, and nothing it held is taken as new by the worker.
func TestMigration0017(t *testing.T) {
	ctx := context.Background()
	path := openFixtureV13(t)
	old, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's deliveries are all pending: give some an outcome and
	// attempts, as the schema-13 worker recorded them.
	for _, q := range []string{
		`UPDATE webhook_deliveries SET status = 'delivered', attempt_count = 1, next_attempt_at = NULL WHERE event_seq % 5 = 0`,
		`UPDATE webhook_deliveries SET status = 'failed', attempt_count = 10, next_attempt_at = NULL WHERE event_seq % 5 = 1`,
		`UPDATE webhook_deliveries SET attempt_count = 2, next_attempt_at = next_attempt_at + 3600000 WHERE event_seq % 5 = 2`,
		`INSERT INTO webhook_attempts (delivery_id, at, status_code, duration_ms, response_excerpt, error)
			SELECT id, created_at + n, CASE WHEN status = 'delivered' THEN 204 ELSE 500 END, n, 'r' || n, NULL
			FROM webhook_deliveries, (SELECT 1 AS n UNION ALL SELECT 2) WHERE attempt_count >= n ORDER BY event_seq, n`,
	} {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	type delivery struct {
		id, endpoint, status string
		attempts             int
		next                 sql.NullInt64
		created              int64
		excerpts             string
	}
	var before []delivery
	rows, err := old.Query(`SELECT d.id, d.endpoint_id, d.status, d.attempt_count, d.next_attempt_at, d.created_at,
		coalesce((SELECT group_concat(a.response_excerpt || '@' || a.at, ',') FROM (SELECT * FROM webhook_attempts a WHERE a.delivery_id = d.id ORDER BY a.id) a), '')
		FROM webhook_deliveries d ORDER BY d.event_seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d delivery
		if err := rows.Scan(&d.id, &d.endpoint, &d.status, &d.attempts, &d.next, &d.created, &d.excerpts); err != nil {
			t.Fatal(err)
		}
		before = append(before, d)
	}
	rows.Close()
	var projectID string
	if err := old.QueryRow(`SELECT project_id FROM webhook_endpoints`).Scan(&projectID); err != nil {
		t.Fatal(err)
	}
	old.Close()
	if len(before) < 100 {
		t.Fatalf("the fixture has %d deliveries", len(before))
	}

	db, _, _ := openRunning(t, Options{Path: path, Logger: slog.New(slog.DiscardHandler)})
	for _, want := range before {
		got, err := db.GetWebhookDelivery(ctx, projectID, want.endpoint, want.id)
		if err != nil {
			t.Fatalf("delivery %s: %v", want.id, err)
		}
		var excerpts []string
		for _, a := range got.Attempts {
			excerpts = append(excerpts, fmt.Sprintf("%s@%d", a.ResponseExcerpt, a.At.UnixMilli()))
		}
		next := sql.NullInt64{}
		if got.NextAttemptAt != nil {
			next = sql.NullInt64{Int64: got.NextAttemptAt.UnixMilli(), Valid: true}
		}
		if got.ID != want.id || got.Status != want.status || got.AttemptCount != want.attempts || next != want.next ||
			got.CreatedAt.UnixMilli() != want.created || strings.Join(excerpts, ",") != want.excerpts {
			t.Errorf("delivery %s after the migration: %+v, attempts %v; want %+v", want.id, got, excerpts, want)
		}
	}
	var newOnes int
	if err := db.r.QueryRow(`SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE d.event_seq > e.claimed_seq AND d.legacy_id IS NOT NULL`).Scan(&newOnes); err != nil || newOnes != 0 {
		t.Errorf("%d migrated deliveries past claimed_seq (%v)", newOnes, err)
	}

	// A new event's delivery has an id of the new kind (the writer stored
	// the fixture's deferred message too); the endpoint's list runs from
	// the new ones through every migrated one, newest first.
	endpoint := before[0].endpoint
	var inbox string
	if err := db.r.QueryRow(`SELECT id FROM inboxes WHERE address = 'inbox@localhost'`).Scan(&inbox); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest(ctx, incoming(inbox, "From: a@example.com\r\nTo: inbox@localhost\r\nMessage-ID: <after17@example.com>\r\nSubject: after\r\n\r\nbody\r\n")); err != nil {
		t.Fatal(err)
	}
	var listed []string
	var after *TimeKey
	for {
		page, err := db.WebhookDeliveries(ctx, projectID, endpoint, after, 30)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page {
			listed = append(listed, d.ID)
		}
		if len(page) < 30 {
			break
		}
		last := page[len(page)-1]
		after = &TimeKey{At: last.CreatedAt.UnixMilli(), ID: last.ID}
	}
	var want []string
	for _, d := range slices.Backward(before) {
		want = append(want, d.id)
	}
	fresh := len(listed) - len(want)
	if fresh < 1 || !slices.Equal(listed[fresh:], want) || slices.ContainsFunc(listed[:fresh], func(id string) bool { return slices.Contains(want, id) }) {
		t.Fatalf("listed %d deliveries (first %v), want the new ones and then %d", len(listed), listed[:min(3, len(listed))], len(want))
	}

	// Retried by the old id, a failed delivery is due now; the worker
	// claims the new one and what is due, and records them by id.
	var failed delivery
	for _, d := range before {
		if d.status == WebhookFailed {
			failed = d
			break
		}
	}
	if _, err := db.RetryWebhookDelivery(ctx, projectID, endpoint, failed.id); err != nil {
		t.Fatal(err)
	}
	cs, err := db.ClaimWebhookDeliveries(ctx, 1000, 1000, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	claimed := map[string]bool{}
	for _, c := range cs {
		claimed[c.DeliveryID] = true
		if err := db.RecordWebhookDeliveries(ctx, []WebhookDeliveryResult{{EndpointID: c.EndpointID, DeliveryID: c.DeliveryID,
			Status: WebhookDelivered, Attempt: WebhookAttempt{At: db.now(), StatusCode: 204}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range append(listed[:fresh:fresh], failed.id) {
		if !claimed[id] {
			t.Errorf("claimed %d, not %s", len(cs), id)
		}
	}
	if d, err := db.GetWebhookDelivery(ctx, projectID, endpoint, failed.id); err != nil || d.Status != WebhookDelivered || len(d.Attempts) != 3 {
		t.Errorf("the retried delivery: %+v %v", d, err)
	}
}
