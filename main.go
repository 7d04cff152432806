// Command inboxd is a mail gateway in one binary and one SQLite file: it
// receives mail over SMTP, threads it, and serves it over HTTP.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/inboxd/inboxd/api"
	"github.com/inboxd/inboxd/outbound"
	"github.com/inboxd/inboxd/smtp"
	"github.com/inboxd/inboxd/spool"
	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/webhook"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go watchSignals(sigs, time.Now, cancel, os.Stderr, os.Exit)
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "inboxd:", err)
		os.Exit(1)
	}
}

// forceAfter is how long after the first signal another one forces the
// exit. Sooner, it is the same request again: `timeout` and process
// managers signal the child and its process group at once, and a Ctrl-C in
// a shell that runs inboxd under another process reaches both.
const forceAfter = time.Second

// watchSignals is main's signal handling: the first signal stops the
// server gracefully (stop cancels run's context); a signal at least
// forceAfter later exits at once with code 2.
func watchSignals(sigs <-chan os.Signal, now func() time.Time, stop func(), stderr io.Writer, exit func(code int)) {
	<-sigs
	first := now()
	stop()
	for sig := range sigs {
		if now().Sub(first) >= forceAfter {
			fmt.Fprintf(stderr, "inboxd: %v again, exiting now\n", sig)
			exit(2)
			return
		}
	}
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, getenv, stdout, stderr)
	case "help", "-h", "--help":
		return help(stdout)
	case "version":
		fmt.Fprintln(stdout, "inboxd", version)
		return nil
	case "inboxes":
		return inboxesCmd(ctx, args, getenv, stdout)
	case "keys":
		return keysCmd(ctx, args, getenv, stdout)
	case "send":
		return sendCmd(ctx, args, getenv, stdout)
	}
	return fmt.Errorf("unknown command %q (try: inboxd help)", cmd)
}

func help(w io.Writer) error {
	fmt.Fprint(w, `inboxd — a mail gateway: SMTP in, threads in SQLite, HTTP out.

Usage:
  inboxd [serve] [flags]                      run the server (the default)
  inboxd inboxes create ADDRESS [--display-name N] [--environment live|test]
  inboxd inboxes list
  inboxd inboxes delete ID|ADDRESS
  inboxd keys create --name N --scopes a,b [--inboxes ibx_1,ibx_2]
  inboxd keys list
  inboxd keys revoke KEY_ID
  inboxd send --to ADDRESS [--subject S] [--text T|-] [--html H] [--from INBOX] [--url URL] [--key KEY]
  inboxd version
  inboxd help

Every subcommand takes --data DIR (INBOXD_DATA) and works whether or not the
server is running.

Serve flags (each also read from its environment variable):
`)
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs, &c)
	printFlags(w, fs)
	return nil
}

func newLogger(c *Config, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	serveFlags(fs, &c)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if err := c.validate(); err != nil {
		return err
	}
	log, err := newLogger(&c, stderr)
	if err != nil {
		return err
	}
	// Every flag and file is checked before anything is created: a first
	// start that fails leaves no data directory behind.
	var tlsConfig *tls.Config
	switch {
	case c.TLSCert != "":
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	case c.SMTPTLSSelfSigned:
		if tlsConfig, err = smtp.SelfSignedTLS(c.Hostname); err != nil {
			return err
		}
	}
	workerCfg := outbound.WorkerConfig{RetrySchedule: c.OutboundRetrySchedule, MessageIDFormat: c.RelayMessageIDFormat, Logger: log}
	if c.Outbound == outbound.ModeRelay {
		if workerCfg.Relay, err = smtp.NewRelay(smtp.RelayConfig{URL: c.RelayURL, CAFile: c.RelayCAFile, Insecure: c.RelayInsecure, Hostname: c.Hostname}); err != nil {
			return err
		}
	}
	if c.RelayMessageIDPattern != "" {
		if workerCfg.MessageIDPattern, err = regexp.Compile(c.RelayMessageIDPattern); err != nil || workerCfg.MessageIDPattern.NumSubexp() != 1 {
			return fmt.Errorf("--relay-message-id-pattern must be a regexp with one group: %v", err)
		}
	}
	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	unlock, err := lockDataDir(c.Data)
	if err != nil {
		return err
	}
	defer unlock()
	// Listening before the database is opened: a start that fails on a
	// busy port must not bootstrap the database, or the admin key of the
	// next (first successful) start would never be written or printed.
	smtpLn, err := net.Listen("tcp", c.SMTPAddr)
	if err != nil {
		return fmt.Errorf("smtp listen: %w", err)
	}
	defer smtpLn.Close()
	httpLn, err := net.Listen("tcp", c.HTTPAddr)
	if err != nil {
		return fmt.Errorf("http listen: %w", err)
	}
	defer httpLn.Close()
	var debugSrv *http.Server
	var debugLn net.Listener
	if c.DebugAddr != "" {
		if debugLn, err = net.Listen("tcp", c.DebugAddr); err != nil {
			return fmt.Errorf("debug listen: %w", err)
		}
		defer debugLn.Close()
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		debugSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	deferredWait := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "inboxd_deferred_wait_seconds",
		Help:    "How long inbound messages waited in the deferred parent lookup before they were stored.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 900},
	})
	reg.MustRegister(deferredWait)
	duplicates := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "inboxd_duplicates_total",
		Help: "Duplicate deliveries (same Message-ID, same bytes) answered without storing them again.",
	})
	reg.MustRegister(duplicates)
	db, err := store.Open(ctx, store.Options{
		Path: filepath.Join(c.Data, "inboxd.db"), NoFsync: !c.Fsync, Logger: log,
		OnDeferredStored: func(d time.Duration) { deferredWait.Observe(d.Seconds()) },
		OnDuplicate:      duplicates.Inc, StoreDuplicates: c.StoreDuplicates,
	})
	if err != nil {
		return err
	}
	defer db.Close()

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

	boot, created, err := db.Bootstrap(ctx)
	if err != nil {
		return err
	}
	project, err := db.DefaultProject(ctx)
	if err != nil {
		return err
	}

	if created {
		if err := writeAdminKey(c.Data, boot.AdminToken); err != nil {
			return err
		}
		printWelcome(stdout, c.Data, boot, smtpLn.Addr().String(), httpLn.Addr().String())
	}

	worker := outbound.NewWorker(db, workerCfg)
	sender := outbound.NewService(db, outbound.Config{Mode: c.Outbound, MaxRecipients: c.MaxRecipients, MaxMessageBytes: c.MaxMessageSize,
		RelayRewritesMessageIDs: workerCfg.MessageIDPattern != nil})
	// A message over 1 MiB is received into a file and stored in chunks,
	// so even 25 MB ones cost a few megabytes of memory.
	sp, err := spool.New(filepath.Join(c.Data, "spool"), 1<<20)
	if err != nil {
		return err
	}
	smtpSrv := smtp.NewServer(smtp.Config{
		Spool:            sp,
		Submitter:        sender,
		Hostname:         c.Hostname,
		MaxMessageBytes:  c.MaxMessageSize,
		MaxRecipients:    c.MaxRecipients,
		MaxSessions:      c.MaxSessions,
		MaxSessionsPerIP: c.SMTPMaxSessionsPerIP,
		CommandTimeout:   c.SMTPCommandTimeout,
		SessionTimeout:   c.SMTPSessionTimeout,
		TLS:              tlsConfig,
		AuthInsecure:     c.SMTPAuthInsecure,
		AuthAcceptAny:    c.SMTPAuthAcceptAny,
		Accept:           c.Accept,
		Domains:          c.Domains,
		Logger:           log,
	}, db)
	hooks := webhook.NewWorker(db, webhook.WorkerConfig{
		RetrySchedule: c.WebhookRetrySchedule, DenyPrivate: c.WebhookDenyPrivate, UserAgent: "inboxd/" + version,
		ShutdownGrace: min(10*time.Second, c.ShutdownTimeout), Logger: log,
	})
	apiCfg := api.Config{RateLimit: c.APIRateLimit, Logger: log, Metrics: reg, Sender: sender}
	if c.WebhookDenyPrivate {
		apiCfg.CheckWebhookURL = webhook.CheckURL
	}
	// Closed at the first signal: /readyz answers 503 and long-polls
	// answer at once, while requests in flight finish.
	draining := make(chan struct{})
	apiCfg.Draining = draining
	apiCfg.BodyTimeout = c.HTTPBodyTimeout
	handler, err := api.New(ctx, db, apiCfg)
	if err != nil {
		return err
	}
	// No ReadTimeout or WriteTimeout: they would cut long-polls. The body
	// has its own bound (api.Config.BodyTimeout).
	httpSrv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}

	// The writer outlives the transports: it stops only after SMTP has
	// answered every transaction in flight.
	writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	var wg sync.WaitGroup
	errc := make(chan error, 5)
	start := func(name string, fn func() error) {
		wg.Go(func() {
			if err := fn(); err != nil {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); db.Run(writerCtx) }()
	// The delivery workers stop with the transports; what they have not
	// delivered stays queued in the database for the next start.
	workerCtx, stopWorker := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorker()
	start("outbound", func() error { return worker.Run(workerCtx) })
	start("webhook", func() error { return hooks.Run(workerCtx) })
	start("smtp", func() error { return smtpSrv.Serve(smtpLn) })
	start("http", func() error {
		if err := httpSrv.Serve(httpLn); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	if debugSrv != nil {
		start("debug", func() error {
			if err := debugSrv.Serve(debugLn); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		log.Info("pprof", "addr", debugLn.Addr().String())
	}
	log.Info("inboxd started", "version", version, "smtp", smtpLn.Addr().String(), "http", httpLn.Addr().String(),
		"data", c.Data, "project", project.ID)

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case runErr = <-errc:
		log.Error("shutting down after failure", "err", runErr)
	}
	close(draining)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	// Both transports stop accepting at once and drain side by side.
	var transports sync.WaitGroup
	transports.Go(func() {
		if err := smtpSrv.Shutdown(shutdownCtx); err != nil {
			log.Warn("smtp shutdown: closing sessions still open", "err", err)
			smtpSrv.Close()
		}
		// Shutdown may have run before Serve registered the listener.
		smtpLn.Close()
	})
	transports.Go(func() {
		if err := httpSrv.Shutdown(shutdownCtx); err != nil {
			log.Warn("http shutdown: closing connections still open", "err", err)
			httpSrv.Close()
		}
	})
	transports.Wait()
	if debugSrv != nil {
		debugSrv.Close()
	}
	stopWorker()
	wg.Wait()
	stopWriter()
	<-writerDone
	log.Info("stopped")
	return runErr
}

func writeAdminKey(dir, token string) error {
	path := filepath.Join(dir, "admin.key")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return fmt.Errorf("write admin key: %w", err)
	}
	return nil
}

func printWelcome(w io.Writer, dir string, b store.Bootstrapped, smtpAddr, httpAddr string) {
	host, port, _ := net.SplitHostPort(smtpAddr)
	fmt.Fprintf(w, `inboxd: first start, created
  project    %s
  admin key  %s
             (shown once; also written to %s, mode 0600)
  inbox      %s

Send it a first message:
  swaks --server %s --port %s --from you@example.com --to %s --header "Subject: hello" --body "first mail"
  python3 -c 'import smtplib; smtplib.SMTP("%s", %s).sendmail("you@example.com", ["%s"], "Subject: hello\r\n\r\nfirst mail")'
API: http://%s
`, b.ProjectID, b.AdminToken, filepath.Join(dir, "admin.key"), b.Inbox.Address,
		host, port, b.Inbox.Address, host, port, b.Inbox.Address, httpAddr)
}
