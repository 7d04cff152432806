package app

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/webhook"
)

// The webhook endpoints of SPEC §9. Their secret is shown only by
// CreateWebhook and RotateWebhookSecret; its format is webhook's, which
// signs with it.

// URLCheck refuses a webhook URL at registration (--webhook-deny-private:
// webhook.CheckURL); the delivery worker checks again at connect time.
type URLCheck func(ctx context.Context, u *url.URL) error

// seesWebhook reports whether an endpoint lies within the caller's grant:
// a caller restricted to some inboxes sees only the endpoints limited to
// them; any other answers exactly like one that does not exist.
func (c Caller) seesWebhook(ep store.WebhookEndpoint) bool { return c.CoversInboxes(ep.InboxIDs) }

// grantedWebhook loads an endpoint of the caller's project that its grant
// sees (seesWebhook): any other is ErrNotFound. It checks no scope: the
// operations that call it check their own.
func (a *App) grantedWebhook(ctx context.Context, c Caller, webhookID string) (store.WebhookEndpoint, error) {
	ep, err := a.db.GetWebhookEndpoint(ctx, c.ProjectID, webhookID)
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	if !c.seesWebhook(ep) {
		return store.WebhookEndpoint{}, ErrNotFound
	}
	return ep, nil
}

// ListWebhooks is a page of the project's endpoints that the caller's
// grant sees, oldest first.
func (a *App) ListWebhooks(ctx context.Context, c Caller, p PageParams) (Page[store.WebhookEndpoint], error) {
	if err := c.Need("webhooks:read"); err != nil {
		return Page[store.WebhookEndpoint]{}, err
	}
	return GrantedPage(a, c, "webhooks", p,
		func(after *store.TimeKey, n int) ([]store.WebhookEndpoint, error) {
			return a.db.WebhookEndpointsAfter(ctx, c.ProjectID, after, n)
		},
		c.seesWebhook, func(ep store.WebhookEndpoint) (time.Time, string) { return ep.CreatedAt, ep.ID })
}

// Webhook is one endpoint the caller's grant sees.
func (a *App) Webhook(ctx context.Context, c Caller, webhookID string) (store.WebhookEndpoint, error) {
	if err := c.Need("webhooks:read"); err != nil {
		return store.WebhookEndpoint{}, err
	}
	return a.grantedWebhook(ctx, c, webhookID)
}

// WebhookInput is the input of CreateWebhook and UpdateWebhook. InboxIDs
// left out is, on create, the caller's own inboxes; null is every inbox,
// which only an unrestricted caller may give. A null description is none;
// url, event_types and enabled have no null.
type WebhookInput struct {
	URL         Nullable[string]   `json:"url"`
	EventTypes  Nullable[[]string] `json:"event_types"`
	InboxIDs    OptionalIDs        `json:"inbox_ids"`
	Enabled     Nullable[bool]     `json:"enabled"`
	Description Nullable[string]   `json:"description"`
	Secret      *string            `json:"secret"`
}

// validate checks the fields that are given: an absolute http(s) URL
// without credentials that the URL check (if any) lets through, known
// event types, inboxes the caller may grant, a secret of webhook's format.
func (a *App) validateWebhook(ctx context.Context, c Caller, in *WebhookInput) error {
	for _, err := range []error{notNull("url", in.URL), notNull("event_types", in.EventTypes), notNull("enabled", in.Enabled)} {
		if err != nil {
			return err
		}
	}
	if in.URL.Set {
		u, err := url.Parse(in.URL.V)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || !validPort(u.Port()) {
			return Invalidf("url", "url must be an absolute http or https URL without credentials.")
		}
		if a.checkURL != nil {
			if err := a.checkURL(ctx, u); err != nil {
				return Invalidf("url", "url is refused (--webhook-deny-private): %s.", err.Error())
			}
		}
	}
	for _, t := range in.EventTypes.V {
		if !slices.Contains(store.EventTypes(), t) {
			return Invalidf("event_types", "Unknown event type %q.", t)
		}
	}
	if err := c.MayGrant(in.InboxIDs); err != nil {
		return err
	}
	return validateSecret(in.Secret)
}

// validPort reports whether a URL's port is one a connection can be made
// to: none (the scheme's), or 1–65535.
func validPort(port string) bool {
	if port == "" {
		return true
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// validateSecret checks a secret the caller supplied (nil: none).
func validateSecret(secret *string) error {
	if secret != nil && webhook.ValidateSecret(*secret) != nil {
		return Invalidf("secret", "secret must be whsec_ followed by the base64 of 24 to 64 bytes.")
	}
	return nil
}

// CreateWebhook registers an endpoint from a WebhookInput, url required,
// and returns it with its secret (the one supplied, or a new one), shown
// this once.
func (a *App) CreateWebhook(ctx context.Context, c Caller, decode Decoder) (store.WebhookEndpoint, string, error) {
	if err := c.Need("webhooks:write"); err != nil {
		return store.WebhookEndpoint{}, "", err
	}
	var in WebhookInput
	if err := decode(&in); err != nil {
		return store.WebhookEndpoint{}, "", err
	}
	if !in.URL.Set {
		return store.WebhookEndpoint{}, "", Invalidf("url", "url is required.")
	}
	if err := a.validateWebhook(ctx, c, &in); err != nil {
		return store.WebhookEndpoint{}, "", err
	}
	ne := store.NewWebhookEndpoint{URL: in.URL.V, InboxIDs: c.Granted(in.InboxIDs), Disabled: in.Enabled.Set && !in.Enabled.V,
		EventTypes: in.EventTypes.V, Description: in.Description.V, Secret: webhook.NewSecret()}
	if in.Secret != nil {
		ne.Secret = *in.Secret
	}
	ep, secret, err := a.db.CreateWebhookEndpoint(ctx, c.ProjectID, ne)
	if errors.Is(err, store.ErrNotFound) {
		return store.WebhookEndpoint{}, "", errUnknownInbox
	}
	return ep, secret, err
}

// UpdateWebhook changes the given fields of an endpoint the caller's grant
// sees; its secret changes only through RotateWebhookSecret.
func (a *App) UpdateWebhook(ctx context.Context, c Caller, webhookID string, decode Decoder) (store.WebhookEndpoint, error) {
	if err := c.Need("webhooks:write"); err != nil {
		return store.WebhookEndpoint{}, err
	}
	ep, err := a.grantedWebhook(ctx, c, webhookID)
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	var in WebhookInput
	if err := decode(&in); err != nil {
		return store.WebhookEndpoint{}, err
	}
	if in.Secret != nil {
		return store.WebhookEndpoint{}, Invalidf("secret", "Change the secret with POST …/rotate-secret.")
	}
	if err := a.validateWebhook(ctx, c, &in); err != nil {
		return store.WebhookEndpoint{}, err
	}
	ep, err = a.db.UpdateWebhookEndpoint(ctx, ep.ProjectID, ep.ID, store.WebhookEndpointPatch{
		URL: in.URL.Value(), EventTypes: in.EventTypes.Value(), SetInboxIDs: in.InboxIDs.Set, InboxIDs: in.InboxIDs.IDs,
		Enabled: in.Enabled.Value(), Description: in.Description.orEmpty(),
	})
	if errors.Is(err, store.ErrNotFound) && in.InboxIDs.Set {
		return store.WebhookEndpoint{}, errUnknownInbox
	}
	return ep, err
}

// DeleteWebhook deletes an endpoint the caller's grant sees, with its
// deliveries; it returns the endpoint as it was.
func (a *App) DeleteWebhook(ctx context.Context, c Caller, webhookID string) (store.WebhookEndpoint, error) {
	if err := c.Need("webhooks:write"); err != nil {
		return store.WebhookEndpoint{}, err
	}
	ep, err := a.grantedWebhook(ctx, c, webhookID)
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	if err := a.db.DeleteWebhookEndpoint(ctx, ep.ProjectID, ep.ID); err != nil {
		return store.WebhookEndpoint{}, err
	}
	return ep, nil
}

// SecretInput is the input of RotateWebhookSecret: the new secret, or
// none for a new one made here.
type SecretInput struct {
	Secret *string `json:"secret"`
}

// RotateWebhookSecret replaces the secret of an endpoint the caller's
// grant sees and returns it with the new secret, shown this once; the
// old one keeps signing for store.SecretOverlap. A surface whose request
// carries no input at all passes a decoder that leaves the SecretInput
// as it is.
func (a *App) RotateWebhookSecret(ctx context.Context, c Caller, webhookID string, decode Decoder) (store.WebhookEndpoint, string, error) {
	if err := c.Need("webhooks:write"); err != nil {
		return store.WebhookEndpoint{}, "", err
	}
	ep, err := a.grantedWebhook(ctx, c, webhookID)
	if err != nil {
		return store.WebhookEndpoint{}, "", err
	}
	var in SecretInput
	if err := decode(&in); err != nil {
		return store.WebhookEndpoint{}, "", err
	}
	if err := validateSecret(in.Secret); err != nil {
		return store.WebhookEndpoint{}, "", err
	}
	secret := webhook.NewSecret()
	if in.Secret != nil {
		secret = *in.Secret
	}
	return a.db.RotateWebhookSecret(ctx, ep.ProjectID, ep.ID, secret)
}
