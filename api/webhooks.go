package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/webhook"
)

// The webhook objects of SPEC §9. The secret appears only in the answers
// to create and rotate-secret.

type webhookJSON struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	EventTypes     []string `json:"event_types"`
	InboxIDs       []string `json:"inbox_ids"`
	Enabled        bool     `json:"enabled"`
	Description    *string  `json:"description"`
	CreatedAt      string   `json:"created_at"`
	DisabledReason *string  `json:"disabled_reason"`
}

type webhookWithSecretJSON struct {
	webhookJSON
	Secret string `json:"secret"`
}

func webhookObject(ep store.WebhookEndpoint) webhookJSON {
	return webhookJSON{
		ID: ep.ID, URL: ep.URL, EventTypes: emptyIfNil(ep.EventTypes), InboxIDs: ep.InboxIDs, Enabled: ep.Enabled,
		Description: strOrNull(ep.Description), CreatedAt: timeJSON(ep.CreatedAt), DisabledReason: strOrNull(ep.DisabledReason),
	}
}

type webhookDeliveryJSON struct {
	ID            string  `json:"id"`
	EndpointID    string  `json:"endpoint_id"`
	EventID       string  `json:"event_id"`
	EventType     string  `json:"event_type"`
	Status        string  `json:"status"`
	AttemptCount  int     `json:"attempt_count"`
	NextAttemptAt *string `json:"next_attempt_at"`
	CreatedAt     string  `json:"created_at"`
}

type webhookAttemptJSON struct {
	At              string  `json:"at"`
	StatusCode      *int    `json:"status_code"`
	DurationMS      int64   `json:"duration_ms"`
	ResponseExcerpt *string `json:"response_excerpt"`
	Error           *string `json:"error"`
}

type webhookDeliveryDetailJSON struct {
	webhookDeliveryJSON
	Attempts []webhookAttemptJSON `json:"attempts"`
}

func webhookDeliveryObject(d store.WebhookDelivery) webhookDeliveryJSON {
	return webhookDeliveryJSON{
		ID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, EventType: d.EventType, Status: d.Status,
		AttemptCount: d.AttemptCount, NextAttemptAt: timePtr(d.NextAttemptAt), CreatedAt: timeJSON(d.CreatedAt),
	}
}

func webhookDeliveryDetail(d store.WebhookDelivery) webhookDeliveryDetailJSON {
	out := webhookDeliveryDetailJSON{webhookDeliveryObject(d), []webhookAttemptJSON{}}
	for _, a := range d.Attempts {
		j := webhookAttemptJSON{At: timeJSON(a.At), DurationMS: a.Duration.Milliseconds(),
			ResponseExcerpt: strOrNull(a.ResponseExcerpt), Error: strOrNull(a.Error)}
		if a.StatusCode != 0 {
			code := a.StatusCode
			j.StatusCode = &code
		}
		out.Attempts = append(out.Attempts, j)
	}
	return out
}

type webhookInput struct {
	URL         *string         `json:"url"`
	EventTypes  *[]string       `json:"event_types"`
	InboxIDs    app.OptionalIDs `json:"inbox_ids"`
	Enabled     *bool           `json:"enabled"`
	Description *string         `json:"description"`
	Secret      *string         `json:"secret"`
}

// URLCheck refuses a webhook URL at registration (--webhook-deny-private).
type URLCheck func(ctx context.Context, u *url.URL) error

// validateWebhookInput checks the fields that are set; inbox_ids must lie within the
// key's grant, and a restricted key cannot ask for every inbox.
func (s *Server) validateWebhookInput(r *http.Request, in *webhookInput, check URLCheck) error {
	if in.URL != nil {
		u, err := url.Parse(*in.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return app.Invalidf("url", "url must be an absolute http or https URL without credentials.")
		}
		if check != nil {
			if err := check(r.Context(), u); err != nil {
				return app.Invalidf("url", "url is refused (--webhook-deny-private): %s.", err.Error())
			}
		}
	}
	if in.EventTypes != nil {
		for _, t := range *in.EventTypes {
			if !slices.Contains(store.EventTypes(), t) {
				return app.Invalidf("event_types", "Unknown event type %q.", t)
			}
		}
	}
	if err := callerFrom(r).MayGrant(in.InboxIDs); err != nil {
		return err
	}
	if in.Secret != nil {
		if err := webhook.ValidateSecret(*in.Secret); err != nil {
			return app.Invalidf("secret", "secret must be whsec_ followed by the base64 of 24 to 64 bytes.")
		}
	}
	return nil
}

// canSeeWebhook reports whether an endpoint lies within the key's grant: a
// key restricted to some inboxes sees only endpoints limited to them.
func canSeeWebhook(k app.Caller, ep store.WebhookEndpoint) bool { return k.CoversInboxes(ep.InboxIDs) }

// webhookEndpoint loads the {webhook_id} of the path within the key's
// grant; anything outside it is not found.
func (s *Server) webhookEndpoint(r *http.Request) (store.WebhookEndpoint, error) {
	k := callerFrom(r)
	ep, err := s.db.GetWebhookEndpoint(r.Context(), k.ProjectID, chi.URLParam(r, "webhook_id"))
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	if !canSeeWebhook(k, ep) {
		return store.WebhookEndpoint{}, app.ErrNotFound
	}
	return ep, nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	k := callerFrom(r)
	page, err := app.GrantedPage(s.app, k, "webhooks", pageParams(r),
		func(after *store.TimeKey, n int) ([]store.WebhookEndpoint, error) {
			return s.db.WebhookEndpointsAfter(r.Context(), k.ProjectID, after, n)
		},
		func(ep store.WebhookEndpoint) bool { return canSeeWebhook(k, ep) },
		func(ep store.WebhookEndpoint) (time.Time, string) { return ep.CreatedAt, ep.ID })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, webhookObject)
}

func (s *Server) createWebhook(check URLCheck) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.createWebhookWith(w, r, check) }
}

func (s *Server) createWebhookWith(w http.ResponseWriter, r *http.Request, check URLCheck) {
	var in webhookInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.URL == nil {
		s.writeError(w, r, app.Invalidf("url", "url is required."))
		return
	}
	if err := s.validateWebhookInput(r, &in, check); err != nil {
		s.writeError(w, r, err)
		return
	}
	k := callerFrom(r)
	ne := store.NewWebhookEndpoint{URL: *in.URL, InboxIDs: in.InboxIDs.IDs, Disabled: in.Enabled != nil && !*in.Enabled}
	if !in.InboxIDs.Set && k.InboxIDs != nil {
		ne.InboxIDs = k.InboxIDs // a restricted key's endpoint covers its grant
	}
	if in.EventTypes != nil {
		ne.EventTypes = *in.EventTypes
	}
	if in.Description != nil {
		ne.Description = *in.Description
	}
	if in.Secret != nil {
		ne.Secret = *in.Secret
	} else {
		ne.Secret = webhook.NewSecret()
	}
	ep, secret, err := s.db.CreateWebhookEndpoint(r.Context(), k.ProjectID, ne)
	if errors.Is(err, store.ErrNotFound) {
		s.writeError(w, r, app.Invalidf("inbox_ids", "inbox_ids names an inbox that does not exist."))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, webhookWithSecretJSON{webhookObject(ep), secret})
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) {
	ep, err := s.webhookEndpoint(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookObject(ep))
}

func (s *Server) updateWebhook(check URLCheck) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.updateWebhookWith(w, r, check) }
}

func (s *Server) updateWebhookWith(w http.ResponseWriter, r *http.Request, check URLCheck) {
	ep, err := s.webhookEndpoint(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in webhookInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.Secret != nil {
		s.writeError(w, r, app.Invalidf("secret", "Change the secret with POST …/rotate-secret."))
		return
	}
	if err := s.validateWebhookInput(r, &in, check); err != nil {
		s.writeError(w, r, err)
		return
	}
	ep, err = s.db.UpdateWebhookEndpoint(r.Context(), ep.ProjectID, ep.ID, store.WebhookEndpointPatch{
		URL: in.URL, EventTypes: in.EventTypes, SetInboxIDs: in.InboxIDs.Set, InboxIDs: in.InboxIDs.IDs,
		Enabled: in.Enabled, Description: in.Description,
	})
	if errors.Is(err, store.ErrNotFound) && in.InboxIDs.Set {
		s.writeError(w, r, app.Invalidf("inbox_ids", "inbox_ids names an inbox that does not exist."))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookObject(ep))
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	ep, err := s.webhookEndpoint(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.db.DeleteWebhookEndpoint(r.Context(), ep.ProjectID, ep.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": ep.ID, "deleted": true})
}

// rotateWebhookSecret takes an optional body {"secret": …}; without one a
// secret is generated.
func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	ep, err := s.webhookEndpoint(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		s.writeError(w, r, decodeError(err))
		return
	}
	var in struct {
		Secret *string `json:"secret"`
	}
	if len(bytes.TrimSpace(body)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := s.decodeJSON(w, r, &in); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	secret := webhook.NewSecret()
	if in.Secret != nil {
		if err := s.validateWebhookInput(r, &webhookInput{Secret: in.Secret}, nil); err != nil {
			s.writeError(w, r, err)
			return
		}
		secret = *in.Secret
	}
	ep, secret, err = s.db.RotateWebhookSecret(r.Context(), ep.ProjectID, ep.ID, secret)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookWithSecretJSON{webhookObject(ep), secret})
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) {
	ep, err := s.webhookEndpoint(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, err := listLimit(r, 25)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	scope := app.CursorScope{Project: ep.ProjectID, List: "webhook_deliveries", Extra: ep.ID}
	after, err := cursorAfter[store.TimeKey](s, r, scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ds, err := s.db.WebhookDeliveries(r.Context(), ep.ProjectID, ep.ID, after, limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writePage(s, w, r, ds, limit, scope, webhookDeliveryObject,
		func(d store.WebhookDelivery) any { return store.TimeKey{At: d.CreatedAt.UnixMilli(), ID: d.ID} })
}

func (s *Server) getWebhookDelivery(w http.ResponseWriter, r *http.Request) {
	ep, err := s.webhookEndpoint(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.db.GetWebhookDelivery(r.Context(), ep.ProjectID, ep.ID, chi.URLParam(r, "delivery_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookDeliveryDetail(d))
}

func (s *Server) retryWebhookDelivery(w http.ResponseWriter, r *http.Request) {
	ep, err := s.webhookEndpoint(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.db.RetryWebhookDelivery(r.Context(), ep.ProjectID, ep.ID, chi.URLParam(r, "delivery_id"))
	if errors.Is(err, store.ErrDelivered) {
		s.writeError(w, r, app.Errorf(app.EConflict, "This delivery was already delivered."))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, webhookDeliveryObject(d))
}
