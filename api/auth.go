package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/store"
)

type ctxKey struct{}

// authed is what authenticate puts in a request's context.
type authed struct {
	key store.Key
	// version is the database's DataVersion when the request came in:
	// values read at it may be served from s.pages.
	version int64
}

// keyFrom returns the authenticated key of a request.
func keyFrom(r *http.Request) store.Key { return r.Context().Value(ctxKey{}).(authed).key }

// versionFrom returns the database version a request was authenticated at.
func versionFrom(r *http.Request) int64 { return r.Context().Value(ctxKey{}).(authed).version }

// authenticate resolves the bearer token to a key (401 otherwise), through
// the store's key cache that SMTP shares: a revocation (through the API or
// the CLI) applies to the next request.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token = strings.TrimSpace(token); !ok || token == "" {
			s.writeError(w, r, errUnauthenticated)
			return
		}
		k, version, err := s.db.Authenticate(r.Context(), store.HashToken(token))
		if errors.Is(err, store.ErrNotFound) {
			s.writeError(w, r, errUnauthenticated)
			return
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, authed{key: k, version: version})))
	})
}

// inProject answers 404 for a project other than the key's, exactly like a
// project that does not exist.
func (s *Server) inProject(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if chi.URLParam(r, "project_id") != keyFrom(r).ProjectID {
			s.writeError(w, r, errNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// need wraps a handler with a scope check (403 permission_denied).
func (s *Server) need(scope string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !keyFrom(r).Has(scope) {
			s.writeError(w, r, errPermission(scope))
			return
		}
		h(w, r)
	}
}

// canSee reports whether the key's grant covers an inbox.
func canSee(k store.Key, inboxID string) bool {
	return k.InboxIDs == nil || slices.Contains(k.InboxIDs, inboxID)
}

// coversInboxes reports whether the key's grant covers a list of inboxes;
// nil, every inbox of the project, is covered only by an unrestricted key.
func coversInboxes(k store.Key, inboxIDs []string) bool {
	if k.InboxIDs == nil {
		return true
	}
	if inboxIDs == nil {
		return false
	}
	for _, id := range inboxIDs {
		if !canSee(k, id) {
			return false
		}
	}
	return true
}

// coversKey reports whether the key's grant covers another key's: every
// scope of it, and its inboxes (SPEC §5.1).
func coversKey(k, other store.Key) bool {
	for _, sc := range other.Scopes {
		if !k.Has(sc) {
			return false
		}
	}
	return coversInboxes(k, other.InboxIDs)
}

// inbox loads the {inbox_id} of the path within the key's grant; anything
// outside it is not found.
func (s *Server) inbox(r *http.Request) (store.Inbox, error) {
	k := keyFrom(r)
	id := chi.URLParam(r, "inbox_id")
	if !canSee(k, id) {
		return store.Inbox{}, errNotFound
	}
	return s.db.GetInbox(r.Context(), k.ProjectID, id)
}
