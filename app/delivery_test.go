package app

import (
	"slices"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

// deliveries makes n events in the bootstrapped inbox (held sends: each
// one event) and returns the deliveries of an endpoint, newest first.
func (e *env) deliveries(ep store.WebhookEndpoint, n int) []string {
	e.t.Helper()
	for i := range n {
		e.held(e.boot.Inbox.ID, "d"+string(rune('a'+i)))
	}
	ds, err := e.db.WebhookDeliveries(e.ctx, e.boot.ProjectID, ep.ID, nil, 100)
	if err != nil || len(ds) != n {
		e.t.Fatalf("deliveries: %d, %v", len(ds), err)
	}
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

func TestWebhookDeliveryOperationsNeedTheirScope(t *testing.T) {
	e := newEnv(t)
	ep := e.endpoint(nil)
	ids := e.deliveries(ep, 1)
	read, write := e.caller(nil, "webhooks:read"), e.caller(nil, "webhooks:write")
	for _, c := range []struct {
		name, scope string
		op          func() error
	}{
		{"list", "webhooks:read", func() error {
			_, err := e.app.ListWebhookDeliveries(e.ctx, write, "whk_missing", PageParams{Limit: "x"})
			return err
		}},
		{"get", "webhooks:read", func() error { _, err := e.app.WebhookDelivery(e.ctx, write, ep.ID, ids[0]); return err }},
		{"retry", "webhooks:write", func() error { _, err := e.app.RetryWebhookDelivery(e.ctx, read, ep.ID, ids[0]); return err }},
	} {
		err := c.op()
		wantError(t, err, EPermissionDenied, "")
		if m := ErrorMessage(err); m != "This API key lacks the scope "+c.scope+"." {
			t.Errorf("%s: %q", c.name, m)
		}
	}
}

// The deliveries of an endpoint outside the caller's grant, or asked for
// under another endpoint, answer exactly like ones that do not exist.
func TestWebhookDeliveriesOutsideTheGrantAreNotFound(t *testing.T) {
	e := newEnv(t)
	all, mine := e.endpoint(nil), e.endpoint([]string{e.boot.Inbox.ID})
	ids := e.deliveries(all, 1)
	if err := e.db.RecordWebhookDeliveries(e.ctx, []store.WebhookDeliveryResult{{EndpointID: all.ID, DeliveryID: ids[0], Status: store.WebhookFailed,
		Attempt: store.WebhookAttempt{At: e.clock.Now(), StatusCode: 500}}}); err != nil {
		t.Fatal(err)
	}
	restricted := e.caller([]string{e.boot.Inbox.ID}, "webhooks:read", "webhooks:write")
	for _, at := range []struct {
		caller             Caller
		endpoint, delivery string
	}{
		{restricted, all.ID, ids[0]}, {e.admin, mine.ID, ids[0]}, {e.admin, all.ID, "dlv_missing"}, {e.admin, "whk_missing", ids[0]},
	} {
		notFound := func(op string, err error) {
			t.Helper()
			if ErrorCode(err) != ENotFound || ErrorMessage(err) != "Resource not found." {
				t.Errorf("%s %s under %s: %v", op, at.delivery, at.endpoint, err)
			}
		}
		_, err := e.app.WebhookDelivery(e.ctx, at.caller, at.endpoint, at.delivery)
		notFound("get", err)
		_, err = e.app.RetryWebhookDelivery(e.ctx, at.caller, at.endpoint, at.delivery)
		notFound("retry", err)
	}
	if _, err := e.app.ListWebhookDeliveries(e.ctx, restricted, all.ID, PageParams{Limit: "x"}); ErrorCode(err) != ENotFound {
		t.Errorf("list outside the grant: %v", err)
	}
	if d, err := e.db.GetWebhookDelivery(e.ctx, e.boot.ProjectID, all.ID, ids[0]); err != nil || d.Status != store.WebhookFailed {
		t.Errorf("a delivery outside the grant was retried: %+v, %v", d, err)
	}
	if page, err := e.app.ListWebhookDeliveries(e.ctx, restricted, mine.ID, PageParams{}); err != nil || len(page.Rows) != 1 {
		t.Errorf("list within the grant: %+v, %v", page, err)
	}
}

func TestWebhookDeliveriesPages(t *testing.T) {
	e := newEnv(t)
	ep, other := e.endpoint(nil), e.endpoint(nil)
	want := e.deliveries(ep, 3)
	c := e.caller(nil, "webhooks:read")
	p := PageParams{Limit: "2"}
	var got []string
	var first Page[store.WebhookDelivery]
	for range 3 {
		page, err := e.app.ListWebhookDeliveries(e.ctx, c, ep.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		if p.Cursor == "" {
			first = page
		}
		for _, d := range page.Rows {
			if d.EndpointID != ep.ID {
				t.Errorf("delivery %s of endpoint %s", d.ID, d.EndpointID)
			}
			got = append(got, d.ID)
		}
		if !page.HasMore {
			break
		}
		p.Cursor = page.Next
	}
	if !slices.Equal(got, want) || !first.HasMore {
		t.Errorf("deliveries %v, want %v newest first", got, want)
	}
	_, err := e.app.ListWebhookDeliveries(e.ctx, c, other.ID, PageParams{Cursor: first.Next})
	wantError(t, err, EInvalidCursor, "cursor")
	for _, limit := range []string{"0", "101", "x"} {
		_, err := e.app.ListWebhookDeliveries(e.ctx, c, ep.ID, PageParams{Limit: limit})
		wantError(t, err, EInvalidRequest, "limit")
	}
}

// A delivery is read with its attempts; a retry makes a failed or pending
// one due now, and one delivered already is a conflict.
func TestWebhookDeliveryAndRetry(t *testing.T) {
	e := newEnv(t)
	ep := e.endpoint(nil)
	ids := e.deliveries(ep, 2)
	delivered, failed := ids[0], ids[1]
	now := e.clock.Now()
	for _, o := range []store.WebhookDeliveryResult{
		{EndpointID: ep.ID, DeliveryID: delivered, Status: store.WebhookDelivered, Attempt: store.WebhookAttempt{At: now, StatusCode: 204, Duration: time.Millisecond}},
		{EndpointID: ep.ID, DeliveryID: failed, Status: store.WebhookFailed, Attempt: store.WebhookAttempt{At: now, StatusCode: 500, Duration: 42 * time.Millisecond, ResponseExcerpt: "oops"}},
	} {
		if err := e.db.RecordWebhookDeliveries(e.ctx, []store.WebhookDeliveryResult{o}); err != nil {
			t.Fatal(err)
		}
	}
	c := e.caller(nil, "webhooks:read", "webhooks:write")
	d, err := e.app.WebhookDelivery(e.ctx, c, ep.ID, failed)
	if err != nil || d.Status != store.WebhookFailed || len(d.Attempts) != 1 || d.Attempts[0].StatusCode != 500 ||
		d.Attempts[0].ResponseExcerpt != "oops" {
		t.Fatalf("get: %+v, %v", d, err)
	}
	e.clock.Advance(time.Second)
	d, err = e.app.RetryWebhookDelivery(e.ctx, c, ep.ID, failed)
	if err != nil || d.Status != store.WebhookPending || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(e.clock.Now()) {
		t.Errorf("retry a failed delivery: %+v, %v", d, err)
	}
	_, err = e.app.RetryWebhookDelivery(e.ctx, c, ep.ID, delivered)
	if wantError(t, err, EConflict, ""); ErrorMessage(err) != "This delivery was already delivered." {
		t.Errorf("retry a delivered one: %q", ErrorMessage(err))
	}
	if d, err := e.db.GetWebhookDelivery(e.ctx, e.boot.ProjectID, ep.ID, delivered); err != nil || d.Status != store.WebhookDelivered {
		t.Errorf("the delivered one after a refused retry: %+v, %v", d, err)
	}
}
