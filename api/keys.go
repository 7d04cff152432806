package api

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	k := callerFrom(r)
	writeJSON(w, http.StatusOK, map[string]any{"key_id": k.ID, "project_id": k.ProjectID, "scopes": k.Scopes, "inbox_ids": k.InboxIDs})
}

// A key with keys:write sees, lists and revokes only the keys its own
// grant covers (Caller.Covers): any other answers exactly like a key that does
// not exist (SPEC §5.1).
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	k := callerFrom(r)
	page, err := app.GrantedPage(s.app, k, "keys", pageParams(r),
		func(after *store.TimeKey, n int) ([]store.Key, error) {
			return s.db.KeysAfter(r.Context(), k.ProjectID, after, n)
		},
		k.Covers, func(other store.Key) (time.Time, string) { return other.CreatedAt, other.ID })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, keyObject)
}

// createKey refuses, with a 400 naming the field, a grant wider than the
// caller's own: the key asked for does not exist yet, so there is nothing
// to answer 404 about (the 404 of SPEC §5.1 is for existing keys).
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name     string       `json:"name"`
		Scopes   []string     `json:"scopes"`
		InboxIDs optionalList `json:"inbox_ids"`
	}
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(in.Scopes) == 0 {
		s.writeError(w, r, app.Invalidf("scopes", "scopes must list at least one scope."))
		return
	}
	for _, sc := range in.Scopes {
		if !slices.Contains(store.AllScopes(), sc) {
			s.writeError(w, r, app.Invalidf("scopes", "Unknown scope %q.", sc))
			return
		}
	}
	k := callerFrom(r)
	// A key can hand out only what it holds.
	for _, sc := range in.Scopes {
		if !k.Has(sc) {
			s.writeError(w, r, app.Invalidf("scopes", "Cannot grant scope %q: this key does not hold it.", sc))
			return
		}
	}
	inboxes := in.InboxIDs.IDs
	switch {
	case !in.InboxIDs.Set:
		inboxes = k.InboxIDs // left out: the caller's own inboxes
	case inboxes == nil && k.InboxIDs != nil:
		s.writeError(w, r, app.Invalidf("inbox_ids", "This key is restricted to some inboxes: inbox_ids must list them."))
		return
	}
	// A restricted key cannot mint a key for inboxes it cannot see.
	for _, id := range inboxes {
		if !k.CanSee(id) {
			s.writeError(w, r, app.Invalidf("inbox_ids", "Unknown inbox %q.", id))
			return
		}
	}
	nk, token, err := s.db.CreateKey(r.Context(), k.ProjectID, in.Name, in.Scopes, inboxes)
	if errors.Is(err, store.ErrNotFound) {
		s.writeError(w, r, app.Invalidf("inbox_ids", "inbox_ids names an inbox that does not exist."))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		keyJSON
		Token string `json:"token"`
	}{keyObject(nk), token})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	k := callerFrom(r)
	id := chi.URLParam(r, "key_id")
	// A key's scopes and inboxes never change: checked here, they still
	// hold when it is revoked.
	other, err := s.db.GetKey(r.Context(), k.ProjectID, id)
	if err == nil && !k.Covers(other) {
		err = app.ErrNotFound
	}
	if err == nil {
		err = s.db.RevokeKey(r.Context(), k.ProjectID, id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "revoked": true})
}
