package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
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
