package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/inboxd/inboxd/app"
)

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	k := s.app.Me(callerFrom(r))
	writeJSON(w, http.StatusOK, map[string]any{"key_id": k.ID, "project_id": k.ProjectID, "scopes": k.Scopes, "inbox_ids": k.InboxIDs})
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	page, err := s.app.ListKeys(r.Context(), callerFrom(r), pageParams(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, keyObject)
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	k, token, err := s.app.CreateKey(r.Context(), callerFrom(r), s.decoder(w, r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		keyJSON
		Token string `json:"token"`
	}{keyObject(k), token})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "key_id")
	if err := s.app.RevokeKey(r.Context(), callerFrom(r), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "revoked": true})
}

type keyJSON struct {
	ID          string   `json:"id"`
	Name        *string  `json:"name"`
	Scopes      []string `json:"scopes"`
	InboxIDs    []string `json:"inbox_ids"`
	TokenPrefix string   `json:"token_prefix"`
	CreatedAt   string   `json:"created_at"`
	LastUsedAt  *string  `json:"last_used_at"`
}

func keyObject(k app.Key) keyJSON {
	return keyJSON{
		ID: k.ID, Name: strOrNull(k.Name), Scopes: emptyIfNil(k.Scopes), InboxIDs: k.InboxIDs, TokenPrefix: k.TokenPrefix,
		CreatedAt: timeJSON(k.CreatedAt), LastUsedAt: timePtr(k.LastUsedAt),
	}
}
