package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/inboxd/inboxd/app"
)

func (s *Server) listInboxes(w http.ResponseWriter, r *http.Request) {
	page, err := s.app.ListInboxes(r.Context(), callerFrom(r), pageParams(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, inboxObject)
}

func (s *Server) createInbox(w http.ResponseWriter, r *http.Request) {
	ib, err := s.app.CreateInbox(r.Context(), callerFrom(r), s.decoder(w, r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, inboxObject(ib))
}

func (s *Server) getInbox(w http.ResponseWriter, r *http.Request) {
	ib, err := s.app.Inbox(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inboxObject(ib))
}

func (s *Server) updateInbox(w http.ResponseWriter, r *http.Request) {
	ib, err := s.app.UpdateInbox(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), s.decoder(w, r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inboxObject(ib))
}

func (s *Server) deleteInbox(w http.ResponseWriter, r *http.Request) {
	ib, err := s.app.DeleteInbox(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": ib.ID, "deleted": true})
}

type inboxJSON struct {
	ID             string   `json:"id"`
	ProjectID      string   `json:"project_id"`
	Address        string   `json:"address"`
	DisplayName    *string  `json:"display_name"`
	Environment    string   `json:"environment"`
	SendPolicy     string   `json:"send_policy"`
	AllowedDomains []string `json:"allowed_domains"`
	CreatedAt      string   `json:"created_at"`
	DeferredCount  int64    `json:"deferred_count"`
}

func inboxObject(ib app.Inbox) inboxJSON {
	return inboxJSON{
		ID: ib.ID, ProjectID: ib.ProjectID, Address: ib.Address, DisplayName: strOrNull(ib.DisplayName),
		Environment: ib.Environment, SendPolicy: ib.SendPolicy, AllowedDomains: emptyIfNil(ib.AllowedDomains),
		CreatedAt: timeJSON(ib.CreatedAt), DeferredCount: ib.DeferredCount,
	}
}
