package webhook

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the worker's Prometheus metrics (SPEC §13): attempts by the
// receiver's status code ("error" when no answer came) and outcome, and
// how long attempts took. No label names an endpoint.
type Metrics struct {
	attempts *prometheus.CounterVec // code, outcome: delivered, retry, failed
	duration prometheus.Histogram
}

// NewMetrics registers the worker's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inboxd_webhook_attempts_total",
			Help: "Webhook delivery attempts by the receiver's status code (error: none came) and outcome (delivered, retry, failed)."},
			[]string{"code", "outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "inboxd_webhook_attempt_duration_seconds",
			Help: "How long webhook delivery attempts took.", Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}),
	}
	reg.MustRegister(m.attempts, m.duration)
	return m
}

func (m *Metrics) observe(code int, outcome string, seconds float64) {
	if m == nil {
		return
	}
	label := "error"
	if code != 0 {
		label = strconv.Itoa(code)
	}
	m.attempts.WithLabelValues(label, outcome).Inc()
	m.duration.Observe(seconds)
}
