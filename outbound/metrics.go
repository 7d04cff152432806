package outbound

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/inboxd/inboxd/store"
)

// Metrics are the worker's Prometheus metrics (SPEC §13): relay attempts
// per recipient by what came of them. No label names an address. (The
// queue by status is the server's inboxd_outbound_deliveries.)
type Metrics struct {
	attempts *prometheus.CounterVec // result: sent, deferred, bounced, failed
}

// NewMetrics registers the worker's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inboxd_outbound_attempts_total",
		Help: "Relay delivery attempts, one per recipient, by result: sent, deferred (retried later), bounced (5xx), failed (retries used up)."},
		[]string{"result"})}
	for _, r := range []string{store.StatusSent, store.StatusDeferred, store.StatusBounced, store.StatusFailed} {
		m.attempts.WithLabelValues(r) // present at 0 from the start, for rate() and alerts
	}
	reg.MustRegister(m.attempts)
	return m
}

func (m *Metrics) observe(results []store.DeliveryResult) {
	if m == nil {
		return
	}
	for _, r := range results {
		m.attempts.WithLabelValues(r.Status).Inc()
	}
}
