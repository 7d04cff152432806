package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inboxd/inboxd/corpus"
)

// testSecret is a valid whsec_ secret (24 bytes) for endpoints whose
// secret a test does not look at.
const testSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3"

// testClock is the tests' injectable clock (corpus.Clock).
type testClock = corpus.Clock

// openClocked is openTest with a fake clock.
func openClocked(t *testing.T) (*DB, Bootstrapped, *testClock) {
	t.Helper()
	clk := corpus.NewClock(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	db, b, _ := openRunning(t, Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), NoFsync: true, Now: clk.Now})
	return db, b, clk
}

// receive ingests one message into an inbox (producing message.received)
// and moves the clock on a millisecond.
func receive(t *testing.T, db *DB, clk *testClock, inboxID string, n int) {
	t.Helper()
	raw := fmt.Sprintf("From: a@example.com\r\nTo: inbox@localhost\r\nMessage-ID: <wh%d@example.com>\r\nSubject: n%d\r\n\r\nbody\r\n", n, n)
	in := incoming(inboxID, raw)
	in.ReceivedAt = clk.Now()
	if _, err := db.Ingest(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
}

func TestWebhookEndpointCRUD(t *testing.T) {
	db, b, clk := openClocked(t)
	ctx := context.Background()

	first := "whsec_dGhlIGZpcnN0IGVuZHBvaW50IHNlY3JldCwgMzIgYnk="
	ep, secret, err := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "https://example.com/hook", Description: "d", Secret: first})
	if err != nil || secret != first {
		t.Fatalf("create: secret %q, %v", secret, err)
	}
	if !ep.Enabled || ep.InboxIDs != nil || len(ep.EventTypes) != 0 || ep.EventTypes == nil || !strings.HasPrefix(ep.ID, "whk_") {
		t.Errorf("created %+v", ep)
	}
	got, err := db.GetWebhookEndpoint(ctx, b.ProjectID, ep.ID)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(ep) {
		t.Errorf("get = %+v, %v; want %+v", got, err, ep)
	}

	// The format of a secret is webhook's (ValidateSecret); the store
	// only refuses none at all.
	if _, _, err := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "https://x"}); !errors.Is(err, errNoSecret) {
		t.Errorf("no secret: %v, want errNoSecret", err)
	}
	clk.Advance(time.Millisecond)
	supplied := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef01234567"))
	ep2, s2, err := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "http://b", Secret: supplied,
		InboxIDs: []string{b.Inbox.ID}, EventTypes: []string{EventMessageReceived}})
	if err != nil || s2 != supplied {
		t.Fatalf("supplied secret: %q %v", s2, err)
	}
	if _, _, err := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "http://c", InboxIDs: []string{"ibx_none"}, Secret: testSecret}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown inbox: %v", err)
	}
	list, err := db.WebhookEndpoints(ctx, b.ProjectID)
	if err != nil || len(list) != 2 || list[0].ID != ep.ID || list[1].ID != ep2.ID {
		t.Fatalf("list = %+v %v", list, err)
	}

	// Update: fields change, enabling clears the disabled reason.
	off := false
	up, err := db.UpdateWebhookEndpoint(ctx, b.ProjectID, ep2.ID, WebhookEndpointPatch{Enabled: &off, SetInboxIDs: true, InboxIDs: nil})
	if err != nil || up.Enabled || up.InboxIDs != nil || up.URL != "http://b" || !slices.Equal(up.EventTypes, []string{EventMessageReceived}) {
		t.Fatalf("update = %+v %v", up, err)
	}
	if _, err := db.w.Exec(`UPDATE webhook_endpoints SET disabled_reason = 'gone' WHERE id = ?`, ep2.ID); err != nil {
		t.Fatal(err)
	}
	on, u := true, "https://new"
	up, err = db.UpdateWebhookEndpoint(ctx, b.ProjectID, ep2.ID, WebhookEndpointPatch{Enabled: &on, URL: &u})
	if err != nil || !up.Enabled || up.DisabledReason != "" || up.URL != u {
		t.Fatalf("re-enable = %+v %v", up, err)
	}
	if _, err := db.UpdateWebhookEndpoint(ctx, "prj_other", ep2.ID, WebhookEndpointPatch{URL: &u}); !errors.Is(err, ErrNotFound) {
		t.Errorf("update in another project: %v", err)
	}

	// Rotation keeps the previous secret signing for 24 hours.
	if _, _, err := db.RotateWebhookSecret(ctx, b.ProjectID, ep2.ID, ""); !errors.Is(err, errNoSecret) {
		t.Errorf("rotate to no secret: %v, want errNoSecret", err)
	}
	rotated := "whsec_dGhlIHJvdGF0ZWQtaW4gc2VjcmV0LCAyNGI="
	_, s3, err := db.RotateWebhookSecret(ctx, b.ProjectID, ep2.ID, rotated)
	if err != nil || s3 != rotated {
		t.Fatalf("rotate: %q %v", s3, err)
	}
	receive(t, db, clk, b.Inbox.ID, 1)
	cs, err := db.ClaimWebhookDeliveries(ctx, 10, 4, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		want := []string{secret}
		if c.EndpointID == ep2.ID {
			want = []string{s3, supplied}
		}
		if !slices.Equal(c.Secrets, want) {
			t.Errorf("claim of %s: secrets %q, want %q", c.EndpointID, c.Secrets, want)
		}
	}
	clk.Advance(SecretOverlap)
	receive(t, db, clk, b.Inbox.ID, 2)
	cs, err = db.ClaimWebhookDeliveries(ctx, 10, 4, nil, time.Minute)
	if err != nil || len(cs) != 4 { // two new, two whose lease ran out
		t.Fatalf("claim: %d %v", len(cs), err)
	}
	for _, c := range cs {
		if c.EndpointID == ep2.ID && !slices.Equal(c.Secrets, []string{s3}) {
			t.Errorf("after 24 h the old secret still signs: %q", c.Secrets)
		}
	}

	if err := db.DeleteWebhookEndpoint(ctx, b.ProjectID, ep.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetWebhookEndpoint(ctx, b.ProjectID, ep.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if err := db.DeleteWebhookEndpoint(ctx, b.ProjectID, ep.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

// TestWebhookDeliveriesFollowFilters: an ingest writes one delivery per
// enabled endpoint whose filters take the event, in its transaction.
func TestWebhookDeliveriesFollowFilters(t *testing.T) {
	db, b, clk := openClocked(t)
	ctx := context.Background()
	other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(in NewWebhookEndpoint) string {
		clk.Advance(time.Millisecond)
		in.Secret = testSecret
		ep, _, err := db.CreateWebhookEndpoint(ctx, b.ProjectID, in)
		if err != nil {
			t.Fatal(err)
		}
		return ep.ID
	}
	all := mk(NewWebhookEndpoint{URL: "http://all"})
	onlyOther := mk(NewWebhookEndpoint{URL: "http://other", InboxIDs: []string{other.ID}})
	onlySent := mk(NewWebhookEndpoint{URL: "http://sent", EventTypes: []string{"message.sent"}})
	disabled := mk(NewWebhookEndpoint{URL: "http://off"})
	off := false
	if _, err := db.UpdateWebhookEndpoint(ctx, b.ProjectID, disabled, WebhookEndpointPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	receive(t, db, clk, b.Inbox.ID, 1)
	count := func(ep string) int {
		ds, err := db.WebhookDeliveries(ctx, b.ProjectID, ep, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(ds)
	}
	for ep, want := range map[string]int{all: 1, onlyOther: 0, onlySent: 0, disabled: 0} {
		if got := count(ep); got != want {
			t.Errorf("endpoint %s: %d deliveries, want %d", ep, got, want)
		}
	}
	ds, _ := db.WebhookDeliveries(ctx, b.ProjectID, all, nil, 1)
	if d := ds[0]; d.EventType != EventMessageReceived || d.Status != WebhookPending || d.AttemptCount != 0 ||
		d.NextAttemptAt == nil || !strings.HasPrefix(d.EventID, "evt_") {
		t.Errorf("delivery %+v", d)
	}
}

func TestWebhookClaimRespectsPerEndpointLimit(t *testing.T) {
	db, b, clk := openClocked(t)
	ctx := context.Background()
	slow, _, _ := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "http://slow", Secret: testSecret})
	fast, _, _ := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "http://fast", Secret: testSecret})
	for i := range 10 {
		receive(t, db, clk, b.Inbox.ID, i)
	}
	byEndpoint := func(cs []WebhookDeliveryClaim) map[string]int {
		m := map[string]int{}
		for _, c := range cs {
			m[c.EndpointID]++
		}
		return m
	}
	// The slow endpoint has 3 in flight: only one more of its deliveries
	// is claimed, and the fast one's are not held back by its backlog.
	cs, err := db.ClaimWebhookDeliveries(ctx, 32, 4, map[string]int{slow.ID: 3}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := byEndpoint(cs); got[slow.ID] != 1 || got[fast.ID] != 4 {
		t.Errorf("claimed %v, want slow 1 and fast 4", got)
	}
	// The claim recorded the attempt and leased the deliveries.
	for _, c := range cs {
		if c.Attempt != 1 {
			t.Errorf("attempt %d, want 1", c.Attempt)
		}
		var body []byte
		if err := db.r.QueryRow(`SELECT body FROM events WHERE id = ?`, c.EventID).Scan(&body); err != nil || string(body) != string(c.Body) {
			t.Errorf("claimed body %q differs from the stored event %q (%v)", c.Body, body, err)
		}
	}
	// Full endpoints are skipped, and NextWebhookDeliveryAt ignores them too.
	full := map[string]int{slow.ID: 4, fast.ID: 4}
	if cs, err := db.ClaimWebhookDeliveries(ctx, 32, 4, full, time.Minute); err != nil || len(cs) != 0 {
		t.Errorf("claim with both endpoints full: %d %v", len(cs), err)
	}
	if _, ok, err := db.NextWebhookDeliveryAt(ctx, 4, full); err != nil || ok {
		t.Errorf("NextWebhookDeliveryAt with both full: %v %v", ok, err)
	}
	next, ok, err := db.NextWebhookDeliveryAt(ctx, 4, map[string]int{slow.ID: 4})
	if err != nil || !ok || next.After(clk.Now()) {
		t.Errorf("NextWebhookDeliveryAt = %v %v %v, want a due fast delivery", next, ok, err)
	}
	// The total limit holds.
	if cs, err := db.ClaimWebhookDeliveries(ctx, 2, 4, nil, time.Minute); err != nil || len(cs) != 2 {
		t.Errorf("limit 2: %d %v", len(cs), err)
	}
	// Leased deliveries come back after the lease.
	clk.Advance(time.Minute)
	cs, err = db.ClaimWebhookDeliveries(ctx, 100, 100, nil, time.Minute)
	if err != nil || len(cs) != 20 {
		t.Fatalf("after the lease: %d %v, want all 20", len(cs), err)
	}
	attempts := map[int]int{}
	for _, c := range cs {
		attempts[c.Attempt]++
	}
	if attempts[2] != 7 || attempts[1] != 13 {
		t.Errorf("attempt numbers %v, want 7 second attempts", attempts)
	}
}

func TestWebhookAttemptsAndRetry(t *testing.T) {
	db, b, clk := openClocked(t)
	ctx := context.Background()
	ep, _, _ := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "http://x", Secret: testSecret})
	for i := range 3 {
		receive(t, db, clk, b.Inbox.ID, i)
	}
	cs, err := db.ClaimWebhookDeliveries(ctx, 10, 4, nil, time.Minute)
	if err != nil || len(cs) != 3 {
		t.Fatalf("claim: %d %v", len(cs), err)
	}
	now := clk.Now()
	long := strings.Repeat("é", 600) // 1,200 bytes: cut at a rune boundary
	outcomes := map[string]WebhookDeliveryResult{
		cs[0].DeliveryID: {Status: WebhookDelivered, Attempt: WebhookAttempt{At: now, StatusCode: 204, Duration: 12 * time.Millisecond}},
		cs[1].DeliveryID: {Status: WebhookPending, NextAttempt: now.Add(5 * time.Second),
			Attempt: WebhookAttempt{At: now, StatusCode: 500, Duration: time.Millisecond, ResponseExcerpt: long}},
		cs[2].DeliveryID: {Status: WebhookFailed, Attempt: WebhookAttempt{At: now, Error: "connection refused"}},
	}
	for id, o := range outcomes {
		o.EndpointID, o.DeliveryID = ep.ID, id
		if err := db.RecordWebhookDeliveries(ctx, []WebhookDeliveryResult{o}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := db.GetWebhookDelivery(ctx, b.ProjectID, ep.ID, cs[1].DeliveryID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != WebhookPending || d.AttemptCount != 1 || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(now.Add(5*time.Second)) || len(d.Attempts) != 1 {
		t.Fatalf("pending delivery %+v", d)
	}
	if a := d.Attempts[0]; a.StatusCode != 500 || len(a.ResponseExcerpt) != 1024 || a.ResponseExcerpt != long[:1024] || a.Duration != time.Millisecond {
		t.Errorf("attempt %d %d %v", a.StatusCode, len(a.ResponseExcerpt), a.Duration)
	}
	d, _ = db.GetWebhookDelivery(ctx, b.ProjectID, ep.ID, cs[2].DeliveryID)
	if d.Status != WebhookFailed || d.NextAttemptAt != nil || d.Attempts[0].Error != "connection refused" || d.Attempts[0].StatusCode != 0 {
		t.Errorf("failed delivery %+v", d)
	}

	// Manual retry: pending and failed become due now; delivered is refused.
	clk.Advance(time.Second)
	for _, id := range []string{cs[1].DeliveryID, cs[2].DeliveryID} {
		d, err := db.RetryWebhookDelivery(ctx, b.ProjectID, ep.ID, id)
		if err != nil || d.Status != WebhookPending || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(clk.Now()) {
			t.Errorf("retry %s: %+v %v", id, d, err)
		}
	}
	if _, err := db.RetryWebhookDelivery(ctx, b.ProjectID, ep.ID, cs[0].DeliveryID); !errors.Is(err, ErrDelivered) {
		t.Errorf("retry of a delivered one: %v", err)
	}
	if _, err := db.RetryWebhookDelivery(ctx, "prj_other", ep.ID, cs[1].DeliveryID); !errors.Is(err, ErrNotFound) {
		t.Errorf("retry in another project: %v", err)
	}

	// The list is newest first, in keyset pages.
	page1, err := db.WebhookDeliveries(ctx, b.ProjectID, ep.ID, nil, 2)
	if err != nil || len(page1) != 2 {
		t.Fatal(len(page1), err)
	}
	last := page1[1]
	page2, err := db.WebhookDeliveries(ctx, b.ProjectID, ep.ID, &TimeKey{At: last.CreatedAt.UnixMilli(), ID: last.ID}, 2)
	if err != nil || len(page2) != 1 {
		t.Fatal(len(page2), err)
	}
	if got := []string{page1[0].ID, page1[1].ID, page2[0].ID}; !slices.Equal(got, []string{cs[2].DeliveryID, cs[1].DeliveryID, cs[0].DeliveryID}) {
		t.Errorf("order %v", got)
	}

	// A 410 disables the endpoint: nothing of it is due any more.
	if err := db.RecordWebhookDeliveries(ctx, []WebhookDeliveryResult{{EndpointID: ep.ID, DeliveryID: cs[1].DeliveryID, Status: WebhookPending, NextAttempt: clk.Now(),
		DisableReason: "410", URL: ep.URL, Attempt: WebhookAttempt{At: clk.Now(), StatusCode: 410}}}); err != nil {
		t.Fatal(err)
	}
	got, _ := db.GetWebhookEndpoint(ctx, b.ProjectID, ep.ID)
	if got.Enabled || got.DisabledReason != "410" {
		t.Errorf("after 410: %+v", got)
	}
	if _, ok, _ := db.NextWebhookDeliveryAt(ctx, 4, nil); ok {
		t.Error("a disabled endpoint's deliveries are still due")
	}

	// A delivery that is gone is ErrNotFound, and a batch skips it: the
	// batch's other results are stored.
	gone := WebhookDeliveryResult{EndpointID: ep.ID, DeliveryID: "dlv_none", Status: WebhookDelivered}
	if err := db.tx(ctx, func(tx *sql.Tx) error { return db.recordWebhookDeliveryTx(ctx, tx, gone) }); !errors.Is(err, ErrNotFound) {
		t.Errorf("record for a missing delivery: %v", err)
	}
	again := WebhookDeliveryResult{EndpointID: ep.ID, DeliveryID: cs[2].DeliveryID, Status: WebhookFailed, Attempt: WebhookAttempt{At: clk.Now(), Error: "again"}}
	if err := db.RecordWebhookDeliveries(ctx, []WebhookDeliveryResult{gone, again}); err != nil {
		t.Errorf("a batch with a missing delivery: %v", err)
	}
	if d, err := db.GetWebhookDelivery(ctx, b.ProjectID, ep.ID, cs[2].DeliveryID); err != nil || len(d.Attempts) != 2 || d.Attempts[1].Error != "again" {
		t.Errorf("the batch's other result was not stored: %+v %v", d, err)
	}
}

// New deliveries are found past their endpoint's claimed_seq, not in the
// due index (migration 0017). Interleaving new events, claims that take
// only part of what is due, manual retries of deliveries not yet claimed
// and recorded outcomes, every delivery is claimed, none is claimed again
// before its lease or retry is due, and claimed_seq never passes a new
// delivery.
// Two attempts of one delivery can be in flight (a manual retry while the
// first is out, or a lease that ended): once a receiver has taken it, a
// later failure from the other is recorded as an attempt but does not
// make it pending again, to be sent once more.
func TestWebhookDeliveredStaysDelivered(t *testing.T) {
	db, b, clk := openClocked(t)
	ctx := context.Background()
	ep, _, _ := db.CreateWebhookEndpoint(ctx, b.ProjectID, NewWebhookEndpoint{URL: "http://x", Secret: testSecret})
	receive(t, db, clk, b.Inbox.ID, 0)
	cs, err := db.ClaimWebhookDeliveries(ctx, 10, 4, nil, time.Minute)
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim: %d %v", len(cs), err)
	}
	id, now := cs[0].DeliveryID, clk.Now()
	for _, o := range []WebhookDeliveryResult{
		{Status: WebhookDelivered, Attempt: WebhookAttempt{At: now, StatusCode: 200}},
		{Status: WebhookPending, NextAttempt: now.Add(time.Second), Attempt: WebhookAttempt{At: now, StatusCode: 500}},
		{Status: WebhookFailed, Attempt: WebhookAttempt{At: now, Error: "timeout"}},
	} {
		o.EndpointID, o.DeliveryID = ep.ID, id
		if err := db.RecordWebhookDeliveries(ctx, []WebhookDeliveryResult{o}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := db.GetWebhookDelivery(ctx, b.ProjectID, ep.ID, id)
	if err != nil || d.Status != WebhookDelivered || d.NextAttemptAt != nil || len(d.Attempts) != 3 {
		t.Fatalf("after a late failure: %+v %v, want delivered with 3 attempts", d, err)
	}
	clk.Advance(time.Hour)
	if cs, err := db.ClaimWebhookDeliveries(ctx, 10, 4, nil, time.Minute); err != nil || len(cs) != 0 {
		t.Errorf("claimed again: %d %v", len(cs), err)
	}
}

func TestWebhookNewDeliveriesAreClaimedOnce(t *testing.T) {
	db, b, clk := openClocked(t)
	ctx := context.Background()
	eps := createEndpoints(t, db, b.ProjectID, 2)
	claimedAt := map[string]time.Time{} // delivery → when its lease ends
	delivered := map[string]bool{}
	n := 0
	checkCursor := func(when string) {
		t.Helper()
		var bad int
		if err := db.r.QueryRow(`SELECT count(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
			WHERE d.event_seq <= e.claimed_seq AND d.status = 'pending' AND d.next_attempt_at IS NULL`).Scan(&bad); err != nil || bad != 0 {
			t.Fatalf("%s: %d new deliveries behind claimed_seq (%v)", when, bad, err)
		}
	}
	claim := func(limit int, busy map[string]int) []WebhookDeliveryClaim {
		t.Helper()
		cs, err := db.ClaimWebhookDeliveries(ctx, limit, 2, busy, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if until, ok := claimedAt[c.DeliveryID]; ok && clk.Now().Before(until) {
				t.Fatalf("%s claimed again within its lease", c.DeliveryID)
			}
			if delivered[c.DeliveryID] {
				t.Fatalf("%s claimed again after it was delivered", c.DeliveryID)
			}
			claimedAt[c.DeliveryID] = clk.Now().Add(time.Minute)
			if _, err := db.GetWebhookDelivery(ctx, b.ProjectID, c.EndpointID, c.DeliveryID); err != nil {
				t.Fatalf("claimed %s: %v", c.DeliveryID, err)
			}
		}
		checkCursor("after a claim")
		return cs
	}
	for round := range 6 {
		for i := range 5 {
			if round == 0 && i == 1 {
				// A clock stepped back: newer deliveries, earlier times.
				// The claims, oldest time first, leave gaps.
				clk.Advance(-time.Second)
			}
			receive(t, db, clk, b.Inbox.ID, n)
			n++
		}
		// Retry by hand the newest delivery of the first endpoint before
		// any claim saw it: it is due now, ahead of the older new ones.
		list, err := db.WebhookDeliveries(ctx, b.ProjectID, eps[0].ID, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
		if _, err := db.RetryWebhookDelivery(ctx, b.ProjectID, eps[0].ID, list[0].ID); err != nil {
			t.Fatal(err)
		}
		// A claim of one, one with room for one per endpoint, then one
		// with the second endpoint busy.
		cs := claim(1, nil)
		cs = append(cs, claim(10, map[string]int{eps[0].ID: 1, eps[1].ID: 1})...)
		cs = append(cs, claim(3, map[string]int{eps[1].ID: 2})...)
		// Half of what was claimed is answered: delivered or retried later.
		for i, c := range cs {
			if i%2 == 1 {
				continue
			}
			o := WebhookDeliveryResult{EndpointID: c.EndpointID, DeliveryID: c.DeliveryID, Status: WebhookDelivered,
				Attempt: WebhookAttempt{At: clk.Now(), StatusCode: 204}}
			if round%2 == 1 {
				o.Status, o.NextAttempt = WebhookPending, clk.Now().Add(time.Hour)
			} else {
				delivered[c.DeliveryID] = true
			}
			if err := db.RecordWebhookDeliveries(ctx, []WebhookDeliveryResult{o}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Drained: every delivery is claimed at some point.
	clk.Advance(2 * time.Hour)
	for len(claim(100, nil)) > 0 {
		// each claim takes up to two per endpoint; the leases hold
	}
	if want := 2 * n; len(claimedAt) != want {
		t.Errorf("%d deliveries claimed, want %d", len(claimedAt), want)
	}
	if _, ok, err := db.NextWebhookDeliveryAt(ctx, 2, nil); err != nil || !ok {
		t.Errorf("the claims' leases are due again: %v %v", ok, err)
	}
}

// A delivery's id resolves under its own endpoint only; an id changed in
// any character resolves to nothing.
func TestWebhookDeliveryIDs(t *testing.T) {
	db, b, clk := openClocked(t)
	ctx := context.Background()
	eps := createEndpoints(t, db, b.ProjectID, 2)
	receive(t, db, clk, b.Inbox.ID, 1)
	var ids []string
	for _, ep := range eps {
		l, err := db.WebhookDeliveries(ctx, b.ProjectID, ep.ID, nil, 10)
		if err != nil || len(l) != 1 {
			t.Fatal(len(l), err)
		}
		ids = append(ids, l[0].ID)
		if !strings.HasPrefix(l[0].ID, "dlv_") || len(l[0].ID) != 30 {
			t.Errorf("id %q", l[0].ID)
		}
	}
	if ids[0] == ids[1] {
		t.Fatalf("one event's deliveries to two endpoints share an id: %s", ids[0])
	}
	if _, err := db.GetWebhookDelivery(ctx, b.ProjectID, eps[1].ID, ids[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("another endpoint's delivery: %v", err)
	}
	for i := 4; i < len(ids[0]); i++ {
		for _, c := range []byte("0Z") {
			mangled := []byte(ids[0])
			if mangled[i] == c {
				continue
			}
			mangled[i] = c
			if d, err := db.GetWebhookDelivery(ctx, b.ProjectID, eps[0].ID, string(mangled)); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s (from %s) found %+v, %v", mangled, ids[0], d, err)
			}
		}
	}
}

// createEndpoints registers n endpoints that take every event.
func createEndpoints(t *testing.T, db *DB, projectID string, n int) []WebhookEndpoint {
	t.Helper()
	var eps []WebhookEndpoint
	for range n {
		ep, _, err := db.CreateWebhookEndpoint(context.Background(), projectID, NewWebhookEndpoint{URL: "http://127.0.0.1:9/hook", Secret: testSecret})
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, ep)
	}
	return eps
}
