// Package api is the HTTP side of inboxd: the chi router with every route
// (all in routes below), authentication, the error envelope and the one
// table from an app error code to its status, the JSON of the objects,
// and the OpenAPI document. The use cases are app's: the routes that have
// moved there (me, inboxes, keys, threads, messages, events, test
// inbound, approvals, webhooks) only decode, call and encode.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/httprate"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inboxd/inboxd/app"
)

// Config configures the HTTP API.
type Config struct {
	// Limiter, when set, counts each key's requests (by the caller's
	// id) and answers 429 above its limit. main gives /mcp the same one,
	// so a key has one budget on every surface.
	Limiter *httprate.RateLimiter
	// MaxBodyBytes bounds request bodies (413 above it).
	MaxBodyBytes int64
	// Now is the clock of the thread-page cache.
	Now    func() time.Time
	Logger *slog.Logger
	// Metrics, when set, is served at /metrics.
	Metrics prometheus.Gatherer
	// HTTPMetrics, when set, counts every request by route, method and
	// status (NewMetrics).
	HTTPMetrics *Metrics
	// MaxSendBytes bounds a send request body (attachments arrive base64).
	MaxSendBytes int64
	// Draining, once closed, says the server is shutting down: /readyz
	// answers 503 (the long-polls end through app.Config.Draining).
	// Requests in flight are left to finish: their contexts are not
	// cancelled.
	Draining <-chan struct{}
	// BodyTimeout bounds the time a request body may take to arrive; 0
	// leaves it unbounded.
	BodyTimeout time.Duration
	// Session, when set, authenticates a request that has no
	// Authorization header: the web console's, by its session cookie
	// (web.Console.Authenticate, which also checks the origin of
	// state-changing requests).
	Session func(*http.Request) (app.Caller, int64, error)
}

// Server serves the API.
type Server struct {
	app         *app.App // the operations the routes call
	log         *slog.Logger
	maxBody     int64
	maxSendBody int64

	draining <-chan struct{} // for readyz
	session  func(*http.Request) (app.Caller, int64, error)

	pages *readCache[[]byte] // thread-messages pages (threadMessages)
}

// New returns the HTTP handler over the operations ops.
func New(ops *app.App, cfg Config) http.Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxSendBytes == 0 {
		cfg.MaxSendBytes = 36 << 20 // 25 MiB of attachments in base64
	}
	s := &Server{app: ops, log: cfg.Logger, maxBody: cfg.MaxBodyBytes, maxSendBody: cfg.MaxSendBytes,
		draining: cfg.Draining, session: cfg.Session, pages: newReadCache[[]byte](32<<20, time.Minute, cfg.Now)}
	return s.routes(cfg)
}

// routes is every route of the server, in one place.
func (s *Server) routes(cfg Config) http.Handler {
	r := chi.NewRouter()
	if cfg.HTTPMetrics != nil {
		r.Use(cfg.HTTPMetrics.middleware)
	}
	r.Use(bodyDeadline(cfg.BodyTimeout))
	r.Use(s.recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, app.ErrNotFound) })
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, errMethod) })

	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Get("/v1/openapi.json", s.openapi)

	r.Group(func(r chi.Router) {
		r.Use(func(next http.Handler) http.Handler { return RefuseWhileDraining(s.draining, next) })
		r.Use(s.authenticate)
		if lim := cfg.Limiter; lim != nil {
			r.Use(func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if lim.OnLimit(w, r, callerFrom(r).ID) {
						s.writeError(w, r, errRateLimited)
						return
					}
					next.ServeHTTP(w, r)
				})
			})
		}
		r.Get("/v1/me", s.me) // any valid key
		// Any valid key too: only openapi.json, /healthz and /readyz need
		// none (SPEC §5). Nil with --metrics-addr: served there alone,
		// keyless, on a listener meant to be private.
		if cfg.Metrics != nil {
			r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}))
		}
		// The operations of app check their own scopes; the comment on
		// each route names the one it checks (TestRouteScopes holds every
		// comment to the behaviour).
		r.Route("/v1/projects/{project_id}", func(r chi.Router) {
			r.Use(s.inProject)
			r.Use(s.singleValues)
			r.Get("/inboxes", s.listInboxes)                                                                // inboxes:read
			r.Post("/inboxes", s.createInbox)                                                               // inboxes:write
			r.Get("/inboxes/{inbox_id}", s.getInbox)                                                        // inboxes:read
			r.Patch("/inboxes/{inbox_id}", s.updateInbox)                                                   // inboxes:write
			r.Delete("/inboxes/{inbox_id}", s.deleteInbox)                                                  // inboxes:write
			r.Get("/inboxes/{inbox_id}/threads", s.listThreads)                                             // threads:read
			r.Get("/inboxes/{inbox_id}/threads/{thread_id}", s.getThread)                                   // threads:read
			r.Get("/inboxes/{inbox_id}/threads/{thread_id}/messages", s.threadMessages)                     // messages:read
			r.Get("/inboxes/{inbox_id}/messages", s.inboxMessages)                                          // messages:read
			r.Get("/inboxes/{inbox_id}/messages/{message_id}", s.getMessage)                                // messages:read
			r.Post("/inboxes/{inbox_id}/messages", s.send)                                                  // messages:send
			r.Delete("/inboxes/{inbox_id}/messages", s.deleteInboxMessages)                                 // messages:delete
			r.Delete("/inboxes/{inbox_id}/messages/{message_id}", s.deleteMessage)                          // messages:delete
			r.Get("/inboxes/{inbox_id}/messages/{message_id}/body", s.getBody)                              // messages:read
			r.Get("/inboxes/{inbox_id}/messages/{message_id}/raw", s.getRaw)                                // messages:raw
			r.Get("/inboxes/{inbox_id}/messages/{message_id}/attachments/{attachment_id}", s.getAttachment) // messages:read
			r.Get("/inboxes/{inbox_id}/approvals", s.listApprovals)                                         // approvals:read
			r.Get("/inboxes/{inbox_id}/approvals/{approval_id}", s.getApproval)                             // approvals:read
			r.Post("/inboxes/{inbox_id}/approvals/{approval_id}/approve", s.approve)                        // approvals:write
			r.Post("/inboxes/{inbox_id}/approvals/{approval_id}/reject", s.reject)                          // approvals:write
			r.Get("/events", s.listEvents)                                                                  // events:read
			r.Post("/test/inbound", s.testInbound)                                                          // test:write
			r.Get("/webhooks", s.listWebhooks)                                                              // webhooks:read
			r.Post("/webhooks", s.createWebhook)                                                            // webhooks:write
			r.Get("/webhooks/{webhook_id}", s.getWebhook)                                                   // webhooks:read
			r.Patch("/webhooks/{webhook_id}", s.updateWebhook)                                              // webhooks:write
			r.Delete("/webhooks/{webhook_id}", s.deleteWebhook)                                             // webhooks:write
			r.Post("/webhooks/{webhook_id}/rotate-secret", s.rotateWebhookSecret)                           // webhooks:write
			r.Get("/webhooks/{webhook_id}/deliveries", s.listWebhookDeliveries)                             // webhooks:read
			r.Get("/webhooks/{webhook_id}/deliveries/{delivery_id}", s.getWebhookDelivery)                  // webhooks:read
			r.Post("/webhooks/{webhook_id}/deliveries/{delivery_id}/retry", s.retryWebhookDelivery)         // webhooks:write
			r.Get("/keys", s.listKeys)                                                                      // keys:write
			r.Post("/keys", s.createKey)                                                                    // keys:write
			r.Delete("/keys/{key_id}", s.revokeKey)                                                         // keys:write
		})
	})
	return r
}

// errDraining answers a request that arrives once shutdown has begun.
var errDraining = app.Errorf(app.ETemporarilyUnavailable, "The server is shutting down.")

// RefuseWhileDraining answers every request that arrives once draining
// is closed with 503 temporarily_unavailable (SPEC §13: SIGTERM stops
// accepting; the requests in flight finish). The listener stays open
// while SMTP drains so that /readyz can answer its 503, and this keeps
// it from taking new work meanwhile. The connection closes after the
// answer.
func RefuseWhileDraining(draining <-chan struct{}, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-draining:
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "5")
			writeJSON(w, httpStatus(errDraining), errorJSON(errDraining))
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyTimeout bounds /readyz's database check: a writer that cannot take
// the lock in this long is not ready for mail.
const readyTimeout = 5 * time.Second

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.draining:
		s.writeError(w, r, errDraining)
		return
	default:
	}
	// /healthz never touches the database; /readyz asks it to take the
	// write lock, and gives up after readyTimeout.
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.app.Ready(ctx); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
