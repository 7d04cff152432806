package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/httprate"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inboxd/inboxd/api"
	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/mcp"
	"github.com/inboxd/inboxd/outbound"
	"github.com/inboxd/inboxd/smtp"
	"github.com/inboxd/inboxd/spool"
	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/web"
	"github.com/inboxd/inboxd/webhook"
)

// server is `inboxd serve`: newServer checks the configuration, binds the
// listeners and opens the database; Run serves until its context ends and
// then shuts down gracefully; Close releases what newServer took. Tests
// read the bound addresses from it.
type server struct {
	cfg     Config
	log     *slog.Logger
	project string

	unlock  func()
	smtpLn  net.Listener
	smtpsLn net.Listener // nil without --smtps-addr
	certs   *certs       // nil without TLS
	httpLn  net.Listener
	// acmeLn answers ACME http-01 and redirects to HTTPS (--acme-http-addr;
	// nil without ACME or when it could not be bound).
	acmeLn   net.Listener
	acmeHTTP *http.Server
	debugLn  net.Listener // nil without --debug-addr
	// metricsLn serves /metrics alone with --metrics-addr (nil: /metrics
	// is on the HTTP listener).
	metricsLn net.Listener
	metrics   *http.Server

	db     *store.DB
	smtp   *smtp.Server
	http   *http.Server
	debug  *http.Server // nil without --debug-addr
	worker *outbound.Worker
	hooks  *webhook.Worker
	// draining is closed at the first signal: /readyz answers 503 and
	// long-polls answer at once, while requests in flight finish.
	draining chan struct{}
}

// SMTPAddr, HTTPAddr and DebugAddr are the addresses actually bound.
func (s *server) SMTPAddr() string { return s.smtpLn.Addr().String() }
func (s *server) HTTPAddr() string { return s.httpLn.Addr().String() }

// HTTPURL is the HTTP listener's base URL: https:// with a certificate
// (files or ACME), and with ACME the domain's name.
func (s *server) HTTPURL() string {
	switch {
	case s.certs.ACME():
		host := s.certs.domains[0]
		if _, port, _ := net.SplitHostPort(s.HTTPAddr()); port != "443" {
			host = net.JoinHostPort(host, port)
		}
		return "https://" + host
	case s.certs.HTTPS():
		return "https://" + s.HTTPAddr()
	}
	return "http://" + s.HTTPAddr()
}
func (s *server) MetricsAddr() string {
	if s.metricsLn == nil {
		return ""
	}
	return s.metricsLn.Addr().String()
}
func (s *server) SMTPSAddr() string {
	if s.smtpsLn == nil {
		return ""
	}
	return s.smtpsLn.Addr().String()
}
func (s *server) DebugAddr() string {
	if s.debugLn == nil {
		return ""
	}
	return s.debugLn.Addr().String()
}

// newServer builds the server of c. Every flag and file is checked
// before anything is created, so a first start that fails leaves no data
// directory behind; the first start prints the welcome to stdout. On
// error, what was already taken is released.
func newServer(ctx context.Context, c Config, log *slog.Logger, stdout io.Writer) (_ *server, err error) {
	s := &server{cfg: c, log: log, draining: make(chan struct{})}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	reg := prometheus.NewRegistry()
	if s.certs, err = newCerts(c, log, reg); err != nil {
		return nil, err
	}
	workerCfg := outbound.WorkerConfig{RetrySchedule: c.OutboundRetrySchedule, MessageIDFormat: c.RelayMessageIDFormat, Logger: log,
		Metrics: outbound.NewMetrics(reg), ShutdownGrace: min(10*time.Second, c.ShutdownTimeout)}
	if c.Outbound == app.OutboundRelay {
		if workerCfg.Relay, err = smtp.NewRelay(smtp.RelayConfig{URL: c.RelayURL, CAFile: c.RelayCAFile, Insecure: c.RelayInsecure, Hostname: c.Hostname}); err != nil {
			return nil, err
		}
	}
	if c.Outbound == app.OutboundDirect {
		dc, err := directConfig(c)
		if err != nil {
			return nil, err
		}
		workerCfg.Relay = smtp.NewDirect(dc)
		// Each message has connections of its own: a domain whose
		// exchanger is slow holds some of these, not the queue. The relay
		// keeps one connection, and one message at a time.
		workerCfg.Concurrency, workerCfg.PerDomain = directConcurrency, directPerDomain
	}
	if c.RelayMessageIDPattern != "" {
		re, err := regexp.Compile(c.RelayMessageIDPattern)
		if err != nil || re.NumSubexp() != 1 {
			return nil, fmt.Errorf("--relay-message-id-pattern must be a regexp with one group: %v", err)
		}
		if c.Outbound == app.OutboundRelay { // only a relay's 250 names its Message-ID
			workerCfg.MessageIDPattern = re
		}
	}

	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if s.unlock, err = lockDataDir(c.Data); err != nil {
		return nil, err
	}
	// Listening before the database is opened: a start that fails on a
	// busy port must not bootstrap the database, or the admin key of the
	// next (first successful) start would never be written or printed.
	if s.smtpLn, err = net.Listen("tcp", c.SMTPAddr); err != nil {
		return nil, fmt.Errorf("smtp listen: %w", err)
	}
	if c.SMTPSAddr != "" {
		if s.smtpsLn, err = net.Listen("tcp", c.SMTPSAddr); err != nil {
			return nil, fmt.Errorf("smtps listen: %w", err)
		}
	}
	if s.httpLn, err = net.Listen("tcp", c.HTTPAddr); err != nil {
		return nil, fmt.Errorf("http listen: %w", err)
	}
	if s.certs.ACME() {
		s.acmeLn = listenACMEHTTP(c.ACMEHTTPAddr, log)
	}
	if c.MetricsAddr != "" {
		if s.metricsLn, err = net.Listen("tcp", c.MetricsAddr); err != nil {
			return nil, fmt.Errorf("metrics listen: %w", err)
		}
	}
	if c.DebugAddr != "" {
		if s.debugLn, err = net.Listen("tcp", c.DebugAddr); err != nil {
			return nil, fmt.Errorf("debug listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		s.debug = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	}

	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	deferredWait := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "inboxd_deferred_wait_seconds",
		Help:    "How long inbound messages waited in the deferred parent lookup before they were stored.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 900},
	})
	duplicates := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "inboxd_duplicates_total",
		Help: "Duplicate deliveries (same Message-ID, same bytes) answered without storing them again.",
	})
	batches := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "inboxd_ingest_batch_size",
		Help:    "Requests (ingests and sends) committed by one group commit (one fsync).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	})
	commits := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "inboxd_ingest_commit_duration_seconds",
		Help:    "How long one group commit took, from BEGIN to the end of COMMIT (its fsync included).",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})
	reg.MustRegister(deferredWait, duplicates, batches, commits)
	smtpMetrics, httpMetrics := smtp.NewMetrics(reg), api.NewMetrics(reg)
	// Opening may migrate (minutes for a large database): meanwhile the
	// listeners answer 421 and 503 rather than leave clients hanging.
	var httpTLS *tls.Config
	if s.certs.HTTPS() {
		httpTLS = s.certs.TLSConfig(false) // HTTP/1.1 is all the answer needs
	}
	stopAnswering := answerWhileOpening(c.Hostname, openingListener{l: s.smtpLn}, openingListener{l: s.smtpsLn, tls: s.certs.TLSConfig(false)},
		openingListener{l: s.httpLn, tls: httpTLS, http: true})
	s.db, err = store.Open(ctx, store.Options{
		Path: filepath.Join(c.Data, "inboxd.db"), NoFsync: !c.Fsync, Logger: log,
		OnDeferredStored: func(d time.Duration) { deferredWait.Observe(d.Seconds()) },
		OnDuplicate:      duplicates.Inc, StoreDuplicates: c.StoreDuplicates,
		OnBatch:   func(n int, took time.Duration) { batches.Observe(float64(n)); commits.Observe(took.Seconds()) },
		Retention: c.Retention, MaxMessages: c.MaxMessages, EventRetention: c.EventRetention,
	})
	stopAnswering()
	if err != nil {
		return nil, err
	}
	db := s.db
	registerServerMetrics(reg, db, filepath.Join(c.Data, "inboxd.db"))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "inboxd_deferred_messages",
		Help: "Inbound messages waiting in the deferred parent lookup.",
	}, func() float64 {
		n, _, err := db.DeferredCount(context.Background())
		if err != nil {
			return -1
		}
		return float64(n)
	}))

	boot, created, err := db.BootstrapWith(ctx, func(b store.Bootstrapped) error { return writeAdminKey(c.Data, b.AdminToken) })
	if err != nil {
		return nil, err
	}
	project, err := db.DefaultProject(ctx)
	if err != nil {
		return nil, err
	}
	s.project = project.ID
	if created {
		printWelcome(stdout, c.Data, boot, s.SMTPAddr(), s.HTTPURL())
	}

	s.worker = outbound.NewWorker(db, workerCfg)
	appCfg := app.Config{Logger: log, Draining: s.draining, Send: app.SendConfig{Outbound: c.Outbound, MaxRecipients: c.MaxRecipients,
		MaxMessageBytes: c.MaxMessageSize, RelayRewritesMessageIDs: workerCfg.MessageIDPattern != nil}}
	if c.WebhookDenyPrivate {
		appCfg.CheckWebhookURL = webhook.CheckURL
	}
	// The one App every surface calls: the same rules, cursor secret,
	// long-poll drain and in-flight idempotency keys for all.
	ops, err := app.New(ctx, db, appCfg)
	if err != nil {
		return nil, err
	}
	// A message over 1 MiB is received into a file and stored in chunks,
	// so even 25 MB ones cost a few megabytes of memory.
	sp, err := spool.New(filepath.Join(c.Data, "spool"), 1<<20)
	if err != nil {
		return nil, err
	}
	s.smtp = smtp.NewServer(smtp.Config{
		Spool:            sp,
		Submitter:        submitter{ops},
		Hostname:         c.Hostname,
		MaxMessageBytes:  c.MaxMessageSize,
		MaxRecipients:    c.MaxRecipients,
		MaxSessions:      c.MaxSessions,
		MaxSessionsPerIP: c.SMTPMaxSessionsPerIP,
		CommandTimeout:   c.SMTPCommandTimeout,
		SessionTimeout:   c.SMTPSessionTimeout,
		TLS:              s.certs.TLSConfig(false),
		AuthInsecure:     c.SMTPAuthInsecure,
		AuthAcceptAny:    c.SMTPAuthAcceptAny,
		Accept:           c.Accept,
		Domains:          c.Domains,
		Logger:           log,
		Metrics:          smtpMetrics,
	}, db)
	s.hooks = webhook.NewWorker(db, webhook.WorkerConfig{Metrics: webhook.NewMetrics(reg),
		RetrySchedule: c.WebhookRetrySchedule, DenyPrivate: c.WebhookDenyPrivate, UserAgent: "inboxd/" + strings.Fields(buildVersion())[0],
		ShutdownGrace: min(10*time.Second, c.ShutdownTimeout), Logger: log,
	})
	// The console (web) serves / and /console/…, and its page calls the
	// API with its session cookie: the same routes and checks as any
	// client.
	console := web.New(ops, web.Config{Logger: log, Draining: s.draining})
	// One budget per key on every surface (--api-rate-limit).
	var limiter *httprate.RateLimiter
	if c.APIRateLimit > 0 {
		limiter = httprate.NewRateLimiter(c.APIRateLimit, time.Minute)
	}
	apiCfg := api.Config{Limiter: limiter, Logger: log, Metrics: reg, HTTPMetrics: httpMetrics,
		Draining: s.draining, BodyTimeout: c.HTTPBodyTimeout, Session: console.Authenticate}
	if s.metricsLn != nil {
		// /metrics on its own listener only: not beside the public API.
		apiCfg.Metrics = nil
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		s.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	}
	handler := api.New(ops, apiCfg)
	mcpHandler, err := mcp.New(ops, mcp.Config{PublicURL: c.PublicURL, Limiter: limiter, Version: strings.Fields(buildVersion())[0], Logger: log})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", httpMetrics.Handler("/mcp", api.RefuseWhileDraining(s.draining, mcpHandler)))
	mux.Handle("/", console.Handler(handler))
	// No ReadTimeout or WriteTimeout: they would cut long-polls and the
	// console's event stream. The body has its own bound
	// (api.Config.BodyTimeout), MCP responses and the stream's writes a
	// deadline each.
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)} // handshake noise from scanners
	if s.certs.HTTPS() {
		// A certificate (files or ACME) serves the API, console and /mcp
		// over HTTPS too (HTTP/2 included); the generated SMTP
		// certificate does not.
		s.http.TLSConfig = s.certs.TLSConfig(true)
	}
	if s.acmeLn != nil {
		s.acmeHTTP = &http.Server{Handler: s.certs.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: s.http.ErrorLog}
	}
	return s, nil
}

// Run serves until ctx ends or a part fails, then shuts down (SPEC §13):
// both transports stop accepting and drain side by side, the delivery
// workers stop (what they have not delivered stays queued), and the
// writer stops last, after SMTP has answered every transaction in flight.
func (s *server) Run(ctx context.Context) error {
	writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); s.db.Run(writerCtx) }()

	var wg sync.WaitGroup
	errc := make(chan error, 1) // the first failure; the others follow from the shutdown
	start := func(name string, fn func() error) {
		wg.Go(func() {
			if err := fn(); err != nil {
				select {
				case errc <- fmt.Errorf("%s: %w", name, err):
				default:
				}
			}
		})
	}
	workerCtx, stopWorker := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorker()
	start("outbound", func() error { return s.worker.Run(workerCtx) })
	start("webhook", func() error { return s.hooks.Run(workerCtx) })
	start("smtp", func() error { return s.smtp.Serve(s.smtpLn) })
	if s.smtpsLn != nil {
		start("smtps", func() error { return s.smtp.ServeTLS(s.smtpsLn, s.certs.TLSConfig(false)) })
	}
	start("http", func() error {
		if s.http.TLSConfig != nil {
			if err := s.http.ServeTLS(s.httpLn, "", ""); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}
		return serveHTTP(s.http, s.httpLn)
	})
	if s.acmeHTTP != nil {
		start("acme-http", func() error { return serveHTTP(s.acmeHTTP, s.acmeLn) })
	}
	if s.metrics != nil {
		start("metrics", func() error { return serveHTTP(s.metrics, s.metricsLn) })
	}
	if s.debug != nil {
		start("debug", func() error { return serveHTTP(s.debug, s.debugLn) })
		s.log.Info("pprof", "addr", s.DebugAddr())
	}
	attrs := []any{"version", buildVersion(), "smtp", s.SMTPAddr(), "http", s.HTTPAddr()}
	if s.smtpsLn != nil {
		attrs = append(attrs, "smtps", s.SMTPSAddr())
	}
	if s.metricsLn != nil {
		attrs = append(attrs, "metrics", s.MetricsAddr())
	}
	if s.certs.ACME() {
		attrs = append(attrs, "acme", strings.Join(s.certs.domains, ","))
	}
	s.log.Info("inboxd started", append(attrs, "data", s.cfg.Data, "project", s.project)...)
	if s.certs.ACME() {
		go s.certs.Obtain(workerCtx)
	}

	var runErr error
	select {
	case <-ctx.Done():
		s.log.Info("shutting down")
	case runErr = <-errc:
		s.log.Error("shutting down after failure", "err", runErr)
	}
	close(s.draining)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	// SMTP first: while its transactions in DATA finish, HTTP still
	// answers /readyz with 503 (SPEC §13) and any new request with 503
	// (api.RefuseWhileDraining), and long-polls end at once.
	if err := s.smtp.Shutdown(shutdownCtx); err != nil {
		s.log.Warn("smtp shutdown: closing sessions still open", "err", err)
		s.smtp.Close()
	}
	if err := s.http.Shutdown(shutdownCtx); err != nil {
		s.log.Warn("http shutdown: closing connections still open", "err", err)
		s.http.Close()
	}
	for _, srv := range []*http.Server{s.debug, s.metrics, s.acmeHTTP} {
		if srv != nil {
			srv.Close()
		}
	}
	stopWorker()
	wg.Wait()
	stopWriter()
	<-writerDone
	s.log.Info("stopped")
	return runErr
}

// directConcurrency is how many messages --outbound direct hands to
// mail exchangers at once.
const directConcurrency = 8

// directPerDomain is how many of those may be for one recipient domain:
// a slow domain's queue leaves the other half to the rest of the mail.
const directPerDomain = 4

// directConfig is --outbound direct's transport: its port, its resolver
// and its DKIM keys, each file read and checked now.
func directConfig(c Config) (smtp.DirectConfig, error) {
	dc := smtp.DirectConfig{Hostname: c.Hostname, Port: c.DirectPort, DKIM: map[string]smtp.DKIMKey{}}
	if c.DirectResolver != "" {
		if _, _, err := net.SplitHostPort(c.DirectResolver); err != nil {
			return dc, fmt.Errorf("--direct-resolver must be host:port: %w", err)
		}
		var d net.Dialer
		dc.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, c.DirectResolver)
		}}
	}
	for _, k := range c.DKIMKeys {
		parts := strings.SplitN(k, ":", 3)
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return dc, fmt.Errorf("--dkim-key %q must be DOMAIN:SELECTOR:FILE", k)
		}
		signer, err := smtp.LoadDKIMKey(parts[2])
		if err != nil {
			return dc, fmt.Errorf("--dkim-key: %w", err)
		}
		dc.DKIM[strings.ToLower(strings.TrimSuffix(parts[0], "."))] = smtp.DKIMKey{Selector: parts[1], Signer: signer}
	}
	return dc, nil
}

func serveHTTP(srv *http.Server, l net.Listener) error {
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close releases what newServer took, the database before the lock (a
// second server must not open it before it is closed), and returns the
// first error. After Run it only closes what is left; it may be called on
// a server newServer gave up on halfway.
func (s *server) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && !errors.Is(err, net.ErrClosed) && first == nil {
			first = err
		}
	}
	for _, l := range []net.Listener{s.debugLn, s.metricsLn, s.acmeLn, s.httpLn, s.smtpLn, s.smtpsLn} {
		if l != nil {
			keep(l.Close())
		}
	}
	if s.db != nil {
		keep(s.db.Close())
	}
	if s.unlock != nil {
		s.unlock()
	}
	return first
}

// submitter is app's Submit as smtp's Submitter: smtp answers the one
// client fault of a submission, a From the key may not send from, with
// its own error (550 5.7.1).
type submitter struct{ app *app.App }

func (s submitter) Submit(ctx context.Context, key store.Key, rcpts []string, raw []byte) error {
	err := s.app.Submit(ctx, app.Caller{Key: key}, rcpts, raw)
	if errors.Is(err, app.ErrSenderNotAllowed) {
		return smtp.ErrSenderNotAllowed
	}
	return err
}
