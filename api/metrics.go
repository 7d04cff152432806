package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count HTTP requests by route pattern (never the path itself,
// which holds ids), method and status, with their latency (SPEC §13).
type Metrics struct {
	requests *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "inboxd_http_request_duration_seconds",
		Help:    "HTTP requests by route pattern, method and status code, and how long they took (long-polls included).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 60},
	}, []string{"route", "method", "code"})}
	reg.MustRegister(m.requests)
	return m
}

// Handler counts the requests h serves under the fixed route label route
// (a handler mounted beside the API, such as /mcp).
func (m *Metrics) Handler(route string, h http.Handler) http.Handler {
	return m.measure(func(*http.Request) string { return route }, h)
}

// middleware counts the API's requests under their chi route pattern.
func (m *Metrics) middleware(next http.Handler) http.Handler {
	return m.measure(func(r *http.Request) string {
		if p := chi.RouteContext(r.Context()).RoutePattern(); p != "" {
			return p
		}
		return "unmatched"
	}, next)
}

func (m *Metrics) measure(route func(*http.Request) string, h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		defer func() {
			code := ww.Status()
			if code == 0 {
				code = http.StatusOK
			}
			m.requests.WithLabelValues(route(r), methodLabel(r.Method), strconv.Itoa(code)).Observe(time.Since(start).Seconds())
		}()
		h.ServeHTTP(ww, r)
	})
}

// methodLabel bounds the method label: a client may send any token as
// its method, and each one would be a series of its own.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}
