package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
)

type ctxKey struct{}

// authed is what authenticate puts in a request's context.
type authed struct {
	caller app.Caller
	// version is the database's DataVersion when the request came in:
	// values read at it may be served from s.pages.
	version int64
}

// callerFrom returns who a request is from: its authenticated key.
func callerFrom(r *http.Request) app.Caller { return r.Context().Value(ctxKey{}).(authed).caller }

// versionFrom returns the database version a request was authenticated at.
func versionFrom(r *http.Request) int64 { return r.Context().Value(ctxKey{}).(authed).version }

// authenticate finds the caller of the request's bearer token
// (app.Authenticate; 401 without a valid one), or, for a request without
// an Authorization header, of its console session (Config.Session).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		authenticate := s.session
		if header != "" || authenticate == nil {
			authenticate = func(r *http.Request) (app.Caller, int64, error) {
				// The scheme's name is case-insensitive (RFC 9110 §11.1).
				scheme, token, ok := strings.Cut(header, " ")
				if !ok || !strings.EqualFold(scheme, "Bearer") {
					token = ""
				}
				return s.app.Authenticate(r.Context(), strings.TrimSpace(token))
			}
		}
		c, version, err := authenticate(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, authed{caller: c, version: version})))
	})
}

// inProject answers 404 for a project other than the key's, exactly like a
// project that does not exist.
func (s *Server) inProject(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if chi.URLParam(r, "project_id") != callerFrom(r).ProjectID {
			s.writeError(w, r, app.ErrNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}
