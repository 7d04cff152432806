package main

import (
	"context"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inboxd/inboxd/store"
)

// registerServerMetrics registers what belongs to the process rather
// than to one part: the build, the database's size on disk and the two
// delivery queues by status. (SMTP, HTTP and webhook attempts are counted
// by their packages; the deferred lookup and duplicates in newServer.)
func registerServerMetrics(reg prometheus.Registerer, db *store.DB, dbPath string) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "inboxd_build_info", Help: "Always 1; the labels are the running build's.",
		ConstLabels: prometheus.Labels{"version": strings.Fields(buildVersion())[0], "goversion": runtime.Version()},
	}, func() float64 { return 1 }))
	for _, f := range []struct{ name, suffix, help string }{
		{"inboxd_database_size_bytes", "", "Size of the SQLite database file."},
		{"inboxd_database_wal_size_bytes", "-wal", "Size of the SQLite write-ahead log."},
	} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: f.name, Help: f.help}, func() float64 {
			fi, err := os.Stat(dbPath + f.suffix)
			if err != nil {
				return 0
			}
			return float64(fi.Size())
		}))
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "inboxd_events_total",
		Help: "Events appended to the event log."}, func() float64 {
		return float64(db.EventsAppended())
	}))
	reg.MustRegister(&queueCollector{db: db,
		mail: prometheus.NewDesc("inboxd_outbound_deliveries", "Outbound deliveries (one per recipient) by status: queued, sending and deferred wait; the others are final.",
			[]string{"status"}, nil),
		hooks: prometheus.NewDesc("inboxd_webhook_deliveries", "Webhook deliveries by status: pending is the queue's depth.",
			[]string{"status"}, nil),
	})
}

// queueCollector reads the two queues' counts by status at each scrape.
type queueCollector struct {
	db          *store.DB
	mail, hooks *prometheus.Desc
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- q.mail; ch <- q.hooks }

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range []struct {
		desc  *prometheus.Desc
		count func(context.Context) (map[string]int64, error)
		// every status is shown, at 0 when no row has it: a queue that
		// drains keeps its series for alerts and rate().
		statuses []string
	}{
		{q.mail, q.db.DeliveryCounts, []string{store.StatusQueued, store.StatusSending, store.StatusSent, store.StatusDelivered,
			store.StatusDeferred, store.StatusBounced, store.StatusFailed, store.StatusCaptured}},
		{q.hooks, q.db.WebhookDeliveryCounts, []string{store.WebhookPending, store.WebhookDelivered, store.WebhookFailed}},
	} {
		counts, err := c.count(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.desc, err)
			continue
		}
		for _, s := range c.statuses {
			if _, ok := counts[s]; !ok {
				counts[s] = 0
			}
		}
		for status, n := range counts {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), status)
		}
	}
}
