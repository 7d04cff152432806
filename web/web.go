// Package web is the web console (SPEC §12): the embedded static files
// (plain HTML, CSS and JavaScript modules, no build step) served at /, and
// the few routes of its own that the JSON API has no place for: signing
// in and out, the mail frame and its inline images, live updates over
// Server-Sent Events, and an inbox's counts. Everything else the console's
// script asks for it asks of the JSON API, with the session cookie as its
// credential (Console.Authenticate), so every view and action goes
// through the same route, scope and grant checks as any API client. Like
// every surface it reaches data only through app.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"time"

	"github.com/inboxd/inboxd/app"
)

//go:embed static
var staticFiles embed.FS

// Config configures the console.
type Config struct {
	Logger *slog.Logger
	// Draining, once closed, says the server is shutting down: live event
	// streams end (the browser reconnects to the next server and resumes
	// from its cursor).
	Draining <-chan struct{}
	// Heartbeat is how long an event stream waits for an event before it
	// writes a comment that keeps proxies from closing it; 25 s when 0.
	Heartbeat time.Duration
}

// Console serves the web console.
type Console struct {
	app       *app.App
	log       *slog.Logger
	draining  <-chan struct{}
	heartbeat time.Duration
	origin    *http.CrossOriginProtection
	static    map[string]staticFile // by path under static/
}

type staticFile struct {
	body        []byte
	contentType string
	etag        string
}

// New returns the console over the operations ops.
func New(ops *app.App, cfg Config) *Console {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = 25 * time.Second
	}
	c := &Console{app: ops, log: cfg.Logger, draining: cfg.Draining, heartbeat: cfg.Heartbeat,
		origin: http.NewCrossOriginProtection(), static: map[string]staticFile{}}
	c.origin.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.writeError(w, r, errCrossOrigin) }))
	err := fs.WalkDir(staticFiles, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := staticFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		c.static[p[len("static/"):]] = staticFile{body: body, contentType: ct, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		panic("web: embedded files: " + err.Error()) // they are compiled in: only a broken build gets here
	}
	return c
}

// Handler serves the console's own paths, / and /console/…, and passes
// every other request to api (the JSON API and the server's other
// routes).
func (c *Console) Handler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	own := http.NewServeMux()
	own.HandleFunc("GET /{$}", c.serveIndex)
	own.HandleFunc("GET /console/static/{file...}", c.serveStatic)
	own.HandleFunc("GET /console/session", c.getSession)
	own.HandleFunc("POST /console/session", c.signIn)
	own.HandleFunc("DELETE /console/session", c.signOut)
	own.HandleFunc("GET /console/events", c.events)
	own.HandleFunc("GET /console/events/recent", c.recentEvents)
	own.HandleFunc("GET /console/inboxes/{inbox_id}/counts", c.counts)
	own.HandleFunc("GET /console/inboxes/{inbox_id}/messages/{message_id}/deliveries", c.deliveries)
	own.HandleFunc("GET /console/inboxes/{inbox_id}/messages/{message_id}/frame", c.frame)
	own.HandleFunc("GET /console/inline/{token}/{attachment_id}", c.inline)
	own.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) { c.writeError(w, r, app.ErrNotFound) })
	// Every state-changing request of the console's own checks its origin
	// (the API's, made with the cookie, are checked by Authenticate).
	consoleRoutes := pageHeaders(c.origin.Handler(own))
	mux.Handle("/{$}", consoleRoutes)
	mux.Handle("/console/", consoleRoutes)
	mux.Handle("/", c.apiWithCookie(api))
	return mux
}

// consoleCSP is the policy of every console page and route: the page's
// own scripts and styles only (no inline script, no eval), its own
// origin for requests and frames, and it is framed by nobody.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// pageHeaders sets the safety headers of the console's responses (SPEC
// §12); the mail frame and its images replace the policy with their own.
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// apiWithCookie passes a request to the API; one the browser sends with
// the session cookie (and no Authorization header: Authenticate's case)
// answers for the console's own origin only, so that no other site's page
// can even embed what it fetches.
func (c *Console) apiWithCookie(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := r.Cookie(cookieName); err == nil && r.Header.Get("Authorization") == "" {
			w.Header().Set("Cross-Origin-Resource-Policy", "same-origin")
			w.Header().Set("X-Content-Type-Options", "nosniff")
		}
		api.ServeHTTP(w, r)
	})
}

func (c *Console) serveIndex(w http.ResponseWriter, r *http.Request) {
	c.serveFile(w, r, "index.html")
}

func (c *Console) serveStatic(w http.ResponseWriter, r *http.Request) {
	c.serveFile(w, r, r.PathValue("file"))
}

// serveFile answers an embedded file, revalidated by its ETag on every
// load, so an upgraded binary never leaves an old script in a cache.
func (c *Console) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	f, ok := c.static[name]
	if !ok {
		c.writeError(w, r, app.ErrNotFound)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", f.etag)
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Write(f.body)
}
