// Package api is the HTTP side of inboxd: the chi router with every route,
// authentication, the error envelope and the OpenAPI document. For now it
// serves the health endpoints; the read API builds on this router.
package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Store is what the HTTP side needs from the database.
type Store interface {
	Ping(ctx context.Context) error
}

// New returns the HTTP handler. metrics is served at /metrics.
func New(st Store, log *slog.Logger, metrics prometheus.Gatherer) http.Handler {
	r := chi.NewRouter()
	r.Handle("/metrics", promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}))
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := st.Ping(r.Context()); err != nil {
			log.Error("readyz: database", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{
				"error": map[string]string{"code": "temporarily_unavailable", "message": "Database is not available."},
			})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	return r
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
