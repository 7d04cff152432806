package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
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

func webhookObject(ep app.WebhookEndpoint) webhookJSON {
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

func webhookDeliveryObject(d app.WebhookDelivery) webhookDeliveryJSON {
	return webhookDeliveryJSON{
		ID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, EventType: d.EventType, Status: d.Status,
		AttemptCount: d.AttemptCount, NextAttemptAt: timePtr(d.NextAttemptAt), CreatedAt: timeJSON(d.CreatedAt),
	}
}

func webhookDeliveryDetail(d app.WebhookDelivery) webhookDeliveryDetailJSON {
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

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	page, err := s.app.ListWebhooks(r.Context(), callerFrom(r), pageParams(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, webhookObject)
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) {
	ep, secret, err := s.app.CreateWebhook(r.Context(), callerFrom(r), s.decoder(w, r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, webhookWithSecretJSON{webhookObject(ep), secret})
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) {
	ep, err := s.app.Webhook(r.Context(), callerFrom(r), chi.URLParam(r, "webhook_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookObject(ep))
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) {
	ep, err := s.app.UpdateWebhook(r.Context(), callerFrom(r), chi.URLParam(r, "webhook_id"), s.decoder(w, r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookObject(ep))
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	ep, err := s.app.DeleteWebhook(r.Context(), callerFrom(r), chi.URLParam(r, "webhook_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": ep.ID, "deleted": true})
}

// rotateWebhookSecret takes an optional body {"secret": …}; without one
// (an empty or blank body) a secret is generated.
func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	ep, secret, err := s.app.RotateWebhookSecret(r.Context(), callerFrom(r), chi.URLParam(r, "webhook_id"), s.optionalDecoder(w, r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookWithSecretJSON{webhookObject(ep), secret})
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) {
	page, err := s.app.ListWebhookDeliveries(r.Context(), callerFrom(r), chi.URLParam(r, "webhook_id"), pageParams(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, webhookDeliveryObject)
}

func (s *Server) getWebhookDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := s.app.WebhookDelivery(r.Context(), callerFrom(r), chi.URLParam(r, "webhook_id"), chi.URLParam(r, "delivery_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, webhookDeliveryDetail(d))
}

func (s *Server) retryWebhookDelivery(w http.ResponseWriter, r *http.Request) {
	d, err := s.app.RetryWebhookDelivery(r.Context(), callerFrom(r), chi.URLParam(r, "webhook_id"), chi.URLParam(r, "delivery_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, webhookDeliveryObject(d))
}
