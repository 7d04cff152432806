package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/inboxd/inboxd/app"
)

// cookieName is the session cookie: HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Secure on HTTPS.
const cookieName = "inboxd_session"

// Authenticate finds the caller of a request by its session cookie: the
// API's credential for the console's own requests (api.Config.Session),
// asked only when the request has no Authorization header. A
// state-changing request must come from the console's own origin
// (http.CrossOriginProtection: Sec-Fetch-Site, else Origin against Host);
// SameSite=Strict alone would let a page of another port of the same host
// through.
func (c *Console) Authenticate(r *http.Request) (app.Caller, int64, error) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return app.Caller{}, 0, app.ErrUnauthenticated
	}
	if err := c.origin.Check(r); err != nil {
		return app.Caller{}, 0, errCrossOrigin
	}
	return c.app.Session(r.Context(), ck.Value)
}

// caller is the caller of a console route's request, by its cookie.
func (c *Console) caller(r *http.Request) (app.Caller, error) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return app.Caller{}, app.ErrSessionEnded
	}
	caller, _, err := c.app.Session(r.Context(), ck.Value)
	return caller, err
}

// sessionJSON is who is signed in.
type sessionJSON struct {
	KeyID     string   `json:"key_id"`
	Name      string   `json:"name"`
	ProjectID string   `json:"project_id"`
	Scopes    []string `json:"scopes"`
	InboxIDs  []string `json:"inbox_ids"`
}

func sessionOf(c app.Caller) sessionJSON {
	return sessionJSON{KeyID: c.ID, Name: c.Name, ProjectID: c.ProjectID, Scopes: c.Scopes, InboxIDs: c.InboxIDs}
}

func (c *Console) getSession(w http.ResponseWriter, r *http.Request) {
	caller, err := c.caller(r)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sessionOf(caller))
}

// signIn exchanges the API key in the body ({"token":"…"}) for a session
// and sets its cookie.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&in); err != nil {
		c.writeError(w, r, app.Invalidf("token", "The body must be {\"token\": \"<API key>\"}."))
		return
	}
	// A session already held by this browser ends: one browser, one session.
	if ck, err := r.Cookie(cookieName); err == nil {
		if err := c.app.EndSession(r.Context(), ck.Value); err != nil {
			c.writeError(w, r, err)
			return
		}
	}
	id, caller, err := c.app.StartSession(r.Context(), strings.TrimSpace(in.Token))
	if errors.Is(err, app.ErrUnauthenticated) {
		err = &app.Error{Code: app.EUnauthenticated, Message: "That API key is not valid (unknown or revoked)."}
	}
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	http.SetCookie(w, c.cookie(r, id, int(app.SessionTTL.Seconds())))
	writeJSON(w, http.StatusOK, sessionOf(caller))
}

// signOut ends the session and clears its cookie.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(cookieName); err == nil {
		if err := c.app.EndSession(r.Context(), ck.Value); err != nil {
			c.writeError(w, r, err)
			return
		}
	}
	http.SetCookie(w, c.cookie(r, "", -1))
	writeJSON(w, http.StatusOK, map[string]bool{"signed_out": true})
}

// cookie is the session cookie with value; maxAge −1 deletes it.
func (c *Console) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: cookieName, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: isHTTPS(r)}
}

// isHTTPS reports whether the browser reached the console over HTTPS:
// directly, or through a proxy that says so (X-Forwarded-Proto; a client
// that lies only gets a cookie its own browser will not send over HTTP).
func isHTTPS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}
