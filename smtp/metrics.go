package smtp

import (
	"errors"
	"io"
	"strconv"
	"time"

	gosmtp "github.com/emersion/go-smtp"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the server's Prometheus metrics (SPEC §13). No label names
// an address, inbox or key: the code of a refusal is the only label.
type Metrics struct {
	sessions   prometheus.Counter
	messages   *prometheus.CounterVec // result: accepted, refused
	bytes      prometheus.Counter
	rejections *prometheus.CounterVec // code: the reply's
	ingest     prometheus.Histogram   // end of DATA → reply
}

// NewMetrics registers the server's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		sessions: prometheus.NewCounter(prometheus.CounterOpts{Name: "inboxd_smtp_sessions_total",
			Help: "SMTP sessions begun (connections admitted)."}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inboxd_smtp_messages_total",
			Help: "Messages whose data arrived, by result: accepted (250, stored) or refused."}, []string{"result"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "inboxd_smtp_received_bytes_total",
			Help: "Bytes of message data received."}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "inboxd_smtp_rejections_total",
			Help: "Refused MAIL, RCPT and DATA commands, by reply code."}, []string{"code"}),
		ingest: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "inboxd_smtp_ingest_duration_seconds",
			Help:    "From the end of a message's data to its reply (parse, commit, fsync).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}}),
	}
	reg.MustRegister(m.sessions, m.messages, m.bytes, m.rejections, m.ingest)
	return m
}

// refused counts a command's refusal by its reply code; an error that
// carries a 2xx reply ("250 2.0.0 Already stored as …") is no refusal.
func (m *Metrics) refused(err error) bool {
	var se *gosmtp.SMTPError
	if err == nil || errors.As(err, &se) && se.Code < 400 {
		return false
	}
	code := "451" // what reply makes of an error of ours
	if se != nil {
		code = strconv.Itoa(se.Code)
	}
	m.rejections.WithLabelValues(code).Inc()
	return true
}

// meteredSession counts what a session's commands answer; the session
// itself knows nothing of metrics.
type meteredSession struct {
	*session
	m *Metrics
}

func (ms meteredSession) Mail(from string, opts *gosmtp.MailOptions) error {
	err := ms.session.Mail(from, opts)
	ms.m.refused(err)
	return err
}

func (ms meteredSession) Rcpt(to string, opts *gosmtp.RcptOptions) error {
	err := ms.session.Rcpt(to, opts)
	ms.m.refused(err)
	return err
}

func (ms meteredSession) Data(r io.Reader) error {
	cr := &countingReader{r: r}
	err := ms.session.Data(cr)
	ms.m.bytes.Add(float64(cr.n))
	if !cr.end.IsZero() {
		ms.m.ingest.Observe(time.Since(cr.end).Seconds())
	}
	result := "accepted"
	if ms.m.refused(err) {
		result = "refused"
	}
	ms.m.messages.WithLabelValues(result).Inc()
	return err
}

// countingReader counts the data read and notes when it ended.
type countingReader struct {
	r   io.Reader
	n   int64
	end time.Time
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err == io.EOF && c.end.IsZero() {
		c.end = time.Now()
	}
	return n, err
}
