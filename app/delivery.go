package app

import (
	"context"
	"errors"
	"time"

	"github.com/inboxd/inboxd/store"
)

// The deliveries of a webhook endpoint (SPEC §9): what was sent, each
// attempt, and a retry. They are reached only through an endpoint the
// caller's grant sees (grantedWebhook).

// ListWebhookDeliveries is a page of an endpoint's deliveries, newest
// first.
func (a *App) ListWebhookDeliveries(ctx context.Context, c Caller, webhookID string, p PageParams) (Page[store.WebhookDelivery], error) {
	if err := c.Need("webhooks:read"); err != nil {
		return Page[store.WebhookDelivery]{}, err
	}
	ep, err := a.grantedWebhook(ctx, c, webhookID)
	if err != nil {
		return Page[store.WebhookDelivery]{}, err
	}
	return timeKeyPage(a, p, CursorScope{Project: ep.ProjectID, List: "webhook_deliveries", Extra: ep.ID},
		func(after *store.TimeKey, n int) ([]store.WebhookDelivery, error) {
			return a.db.WebhookDeliveries(ctx, ep.ProjectID, ep.ID, after, n)
		},
		func(d store.WebhookDelivery) (time.Time, string) { return d.CreatedAt, d.ID })
}

// WebhookDelivery is one delivery of an endpoint, with its attempts.
func (a *App) WebhookDelivery(ctx context.Context, c Caller, webhookID, deliveryID string) (store.WebhookDelivery, error) {
	if err := c.Need("webhooks:read"); err != nil {
		return store.WebhookDelivery{}, err
	}
	ep, err := a.grantedWebhook(ctx, c, webhookID)
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	return a.db.GetWebhookDelivery(ctx, ep.ProjectID, ep.ID, deliveryID)
}

// RetryWebhookDelivery makes a pending or failed delivery due now; one
// delivered already is a conflict.
func (a *App) RetryWebhookDelivery(ctx context.Context, c Caller, webhookID, deliveryID string) (store.WebhookDelivery, error) {
	if err := c.Need("webhooks:write"); err != nil {
		return store.WebhookDelivery{}, err
	}
	ep, err := a.grantedWebhook(ctx, c, webhookID)
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	d, err := a.db.RetryWebhookDelivery(ctx, ep.ProjectID, ep.ID, deliveryID)
	if errors.Is(err, store.ErrDelivered) {
		return store.WebhookDelivery{}, Errorf(EConflict, "This delivery was already delivered.")
	}
	return d, err
}
