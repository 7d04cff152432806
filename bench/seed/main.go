// Command seed fills a data directory with messages through the store's
// real ingest path (message.Parse, then store.Ingest and its group-commit
// writer, so every index and the full-text index are built as in
// production), for benchmarking reads on a large database.
//
//	go run ./bench/seed -data /tmp/inboxd-1m -messages 1000000 -threads 100000 -size 2048
//
// Message i belongs to thread i mod threads and, unless it is the thread's
// first, replies to that first message, so threads hold messages/threads
// messages each. A new directory is bootstrapped like the server's first
// start: the admin token is printed and written to DIR/admin.key. Seeding an
// existing directory adds to what is there. Fsync is off by default (the
// data is disposable); the server opens the directory with its own setting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inboxd/inboxd/bench/mailgen"
	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
)

type config struct {
	dir, rcpt         string
	messages, threads int
	size, c, batch    int
	attachRate        float64
	fsync             bool
	seed              uint64
	progress, spacing time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	fs.StringVar(&cfg.dir, "data", "", "data `directory` to fill (created when missing)")
	fs.IntVar(&cfg.messages, "messages", 100000, "messages to store")
	fs.IntVar(&cfg.threads, "threads", 10000, "threads to spread them over")
	fs.IntVar(&cfg.size, "size", 2048, "approximate message size in bytes")
	fs.Float64Var(&cfg.attachRate, "attach-rate", 0.05, "share of messages with an attachment")
	fs.StringVar(&cfg.rcpt, "rcpt", "inbox@localhost", "inbox address (created when missing)")
	// Ingest returns only after its batch commits, so a batch holds at
	// most one message per goroutine: many goroutines make large batches.
	fs.IntVar(&cfg.c, "c", 128, "goroutines feeding the writer")
	fs.IntVar(&cfg.batch, "batch", 512, "largest group commit (store.Options.MaxBatch)")
	fs.BoolVar(&cfg.fsync, "fsync", false, "synchronous=FULL while seeding")
	fs.Uint64Var(&cfg.seed, "seed", 1, "random seed")
	fs.DurationVar(&cfg.progress, "progress", 5*time.Second, "interval of the progress line")
	fs.DurationVar(&cfg.spacing, "spacing", 10*time.Second, "received time between consecutive messages (the last is now)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.dir == "" || cfg.messages < 1 || cfg.threads < 1 || cfg.c < 1 {
		return errors.New("-data is required; -messages, -threads and -c must be positive")
	}
	if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	db, err := store.Open(ctx, store.Options{
		Path: filepath.Join(cfg.dir, "inboxd.db"), NoFsync: !cfg.fsync, MaxBatch: cfg.batch,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer db.Close()
	inbox, err := setup(ctx, db, cfg, stdout)
	if err != nil {
		return err
	}

	writerCtx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	writerDone := make(chan error, 1)
	go func() { writerDone <- db.Run(writerCtx) }()
	start := time.Now()
	done, feedErr := feed(ctx, db, cfg, inbox, stdout)
	elapsed := time.Since(start)
	if feedErr == nil {
		// What a server does in its first idle moment (store/searchindex.go,
		// compaction): a seeded dir is then what a running server's is.
		t := time.Now()
		if p, err := db.PruneNow(ctx); err != nil {
			feedErr = fmt.Errorf("retention round: %w", err)
		} else if p.Compactions > 0 {
			fmt.Fprintf(stdout, "seed: compacted the search index in %s (%d slices)\n", time.Since(t).Round(time.Millisecond), p.Compactions)
		}
	}
	stopWriter()
	if err := <-writerDone; err != nil {
		return fmt.Errorf("writer: %w", err)
	}
	fmt.Fprintf(stdout, "seed: stored %d messages in %d threads in %s (%.0f msgs/s)\n",
		done, min(cfg.threads, cfg.messages), elapsed.Round(time.Millisecond), float64(done)/elapsed.Seconds())
	if fi, err := os.Stat(filepath.Join(cfg.dir, "inboxd.db")); err == nil {
		fmt.Fprintf(stdout, "seed: inboxd.db is %.1f MB (WAL not included)\n", float64(fi.Size())/1e6)
	}
	return feedErr
}

// setup bootstraps a new database like the server's first start and
// returns the target inbox.
func setup(ctx context.Context, db *store.DB, cfg config, stdout io.Writer) (store.Inbox, error) {
	boot, created, err := db.Bootstrap(ctx)
	if err != nil {
		return store.Inbox{}, err
	}
	if created {
		path := filepath.Join(cfg.dir, "admin.key")
		if err := os.WriteFile(path, []byte(boot.AdminToken+"\n"), 0o600); err != nil {
			return store.Inbox{}, fmt.Errorf("write admin key: %w", err)
		}
		fmt.Fprintf(stdout, "seed: created project %s\n  admin key %s (also in %s)\n", boot.ProjectID, boot.AdminToken, path)
	}
	inbox, err := db.InboxByAddress(ctx, cfg.rcpt)
	if errors.Is(err, store.ErrNotFound) {
		p, perr := db.DefaultProject(ctx)
		if perr != nil {
			return store.Inbox{}, perr
		}
		inbox, err = db.CreateInbox(ctx, p.ID, store.NewInbox{Address: cfg.rcpt})
	}
	return inbox, err
}

// feed ingests the messages from cfg.c goroutines and prints a progress
// line every cfg.progress. It returns how many were stored.
func feed(ctx context.Context, db *store.DB, cfg config, inbox store.Inbox, stdout io.Writer) (int64, error) {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var failOnce sync.Once
	var failed error
	fail := func(err error) { failOnce.Do(func() { failed = err; cancel() }) }
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // a second run adds, not duplicates
	base := time.Now().Add(-time.Duration(cfg.messages) * cfg.spacing)
	var next, stored atomic.Int64
	var workers sync.WaitGroup
	for w := range cfg.c {
		workers.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.seed, uint64(w)))
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= cfg.messages {
					return
				}
				in := incoming(cfg, inbox, run, i, base.Add(time.Duration(i)*cfg.spacing), rng)
				if _, err := db.Ingest(ctx, in); err != nil {
					fail(fmt.Errorf("ingest message %d: %w", i, err))
					return
				}
				stored.Add(1)
			}
		})
	}
	progressDone := make(chan struct{})
	var progress sync.WaitGroup
	progress.Go(func() {
		start := time.Now()
		tick := time.NewTicker(cfg.progress)
		defer tick.Stop()
		for {
			select {
			case <-progressDone:
				return
			case <-tick.C:
				n := stored.Load()
				rate := float64(n) / time.Since(start).Seconds()
				eta := time.Duration(float64(int64(cfg.messages)-n) / max(rate, 1) * float64(time.Second))
				fmt.Fprintf(stdout, "seed: %d/%d messages (%.1f%%), %.0f msgs/s, eta %s\n",
					n, cfg.messages, 100*float64(n)/float64(cfg.messages), rate, eta.Round(time.Second))
			}
		}
	})
	workers.Wait()
	close(progressDone)
	progress.Wait()
	if failed == nil && parent.Err() != nil {
		failed = fmt.Errorf("interrupted: %w", parent.Err())
	}
	return stored.Load(), failed
}

// incoming builds and parses message i: thread i mod threads, replying to
// the thread's first message unless it is that message.
func incoming(cfg config, inbox store.Inbox, run string, i int, at time.Time, rng *rand.Rand) *store.Incoming {
	t := i % cfg.threads
	id := func(n int) string { return fmt.Sprintf("seed.%s.%d@example.com", run, n) }
	m := mailgen.Message{
		ID: id(i), To: inbox.Address, Date: at, Size: cfg.size,
		Subject:    mailgen.Subject(rand.New(rand.NewPCG(cfg.seed, uint64(t)))), // the same for the whole thread
		Attachment: rng.Float64() < cfg.attachRate,
	}
	if i != t {
		m.Subject = "Re: " + m.Subject
		m.InReplyTo = id(t)
		m.References = []string{id(t)}
	}
	raw := mailgen.Build(m, rng)
	return &store.Incoming{
		Raw:    raw,
		Trace:  fmt.Appendf(nil, "Received: from seed ([127.0.0.1])\r\n\tby localhost (inboxd) with ESMTP;\r\n\t%s\r\n", at.Format(time.RFC1123Z)),
		Parsed: message.Parse(raw),
		Envelope: store.Envelope{
			MailFrom: "seed@example.com", RcptTo: []string{inbox.Address}, RemoteIP: "127.0.0.1", Helo: "seed",
		},
		Targets:    []store.Target{{InboxID: inbox.ID, Address: inbox.Address}},
		ReceivedAt: at,
	}
}
