// Command refstore is the reference design of issue 18: the least a durable
// SMTP sink with threading and search must do, built from inboxd's own
// dependencies so that bench/run can measure inboxd's ingest against it in
// the same run.
//
// It is, and stays, exactly this: go-smtp; a light parse with go-message
// (the headers threading needs, and the first text/plain part); one
// messages table with a unique Message-ID index; the thread found by
// In-Reply-To, then References newest first, looked up in that index; one
// contentless FTS5 row per message; one writer goroutine that commits
// whatever is queued in one transaction (group commit) on a WAL database
// with synchronous=FULL; and the 250 only after that commit.
//
//	go run ./bench/refstore -data /tmp/ref -smtp-addr 127.0.0.1:0
//
// Once listening it logs `msg="refstore started" smtp=HOST:PORT` on stderr,
// the shape of inboxd's own start line. SIGTERM or SIGINT stops it: the
// listener closes, and what is queued is committed and answered.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	gosmtp "github.com/emersion/go-smtp"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, os.Args[1:], log); err != nil {
		log.Error("refstore", "err", err)
		os.Exit(1)
	}
}

type config struct {
	data, addr string
	maxBatch   int
	maxBytes   int64
}

func run(ctx context.Context, args []string, log *slog.Logger) error {
	var cfg config
	fs := flag.NewFlagSet("refstore", flag.ContinueOnError)
	fs.StringVar(&cfg.data, "data", "", "data `dir` (created when missing); the database is DIR/refstore.db")
	fs.StringVar(&cfg.addr, "smtp-addr", "127.0.0.1:2525", "SMTP listen `host:port` (port 0: the kernel picks)")
	fs.IntVar(&cfg.maxBatch, "max-batch", 256, "messages in one group commit at most")
	fs.Int64Var(&cfg.maxBytes, "max-message-bytes", 25<<20, "largest message accepted")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.data == "" {
		return errors.New("-data is required")
	}
	if err := os.MkdirAll(cfg.data, 0o700); err != nil {
		return err
	}
	st, err := openStore(ctx, filepath.Join(cfg.data, "refstore.db"), cfg.maxBatch)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		st.close()
		return err
	}
	srv := gosmtp.NewServer(gosmtp.BackendFunc(func(*gosmtp.Conn) (gosmtp.Session, error) {
		return &session{st: st, ctx: ctx}, nil
	}))
	srv.Domain = "refstore.localhost"
	srv.MaxMessageBytes = cfg.maxBytes
	srv.MaxRecipients = 100
	srv.ReadTimeout = 5 * time.Minute
	srv.WriteTimeout = 5 * time.Minute
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = slogPrinter{log}

	writerDone := make(chan error, 1)
	wctx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	go func() { writerDone <- st.run(wctx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()
	log.Info("refstore started", "smtp", ln.Addr().String(), "data", cfg.data)

	select {
	case <-ctx.Done():
	case err = <-serveDone:
	}
	// Sessions still in DATA wait on the writer, so the writer stops last:
	// Close ends the listener and the connections, then the writer commits
	// what they queued.
	srv.Close()
	stopWriter()
	err = errors.Join(err, <-writerDone, st.close())
	if errors.Is(err, gosmtp.ErrServerClosed) {
		err = nil
	}
	log.Info("refstore stopped")
	return err
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Printf(format string, v ...any) { p.log.Warn(fmt.Sprintf(format, v...)) }
func (p slogPrinter) Println(v ...any)               { p.log.Warn(fmt.Sprint(v...)) }

// ---- SMTP

type session struct {
	st   *store
	ctx  context.Context
	from string
	rcpt []string
}

func (s *session) Reset()        { s.from, s.rcpt = "", nil }
func (s *session) Logout() error { return nil }

func (s *session) Mail(from string, _ *gosmtp.MailOptions) error {
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	s.rcpt = append(s.rcpt, to)
	return nil
}

// Data reads the message, parses it lightly and answers once the writer
// has committed it.
func (s *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err // go-smtp answers 552 for a message over the limit
	}
	m := parse(raw)
	m.mailFrom, m.rcptTo, m.receivedAt = s.from, strings.Join(s.rcpt, ","), time.Now().UnixMilli()
	if err := s.st.ingest(s.ctx, m); err != nil {
		return &gosmtp.SMTPError{Code: 451, EnhancedCode: gosmtp.EnhancedCode{4, 3, 0}, Message: "Not stored, try again later"}
	}
	return nil
}

// msg is one received message as the writer stores it.
type msg struct {
	raw              []byte
	messageID        string
	candidates       string // JSON list: In-Reply-To, then References newest first
	inReplyTo, refs  string
	subject, from    string
	text             string // the first text/plain part, decoded
	mailFrom, rcptTo string
	receivedAt       int64
	done             chan error
}

// parse reads the headers threading needs and the first text/plain part.
// Anything it cannot read is left empty: the message is still stored.
func parse(raw []byte) *msg {
	m := &msg{raw: raw, done: make(chan error, 1)}
	e, err := gomessage.Read(bytes.NewReader(raw))
	if e == nil {
		m.messageID = fmt.Sprintf("refstore-%d@refstore.invalid", time.Now().UnixNano())
		return m
	}
	_ = err // an unknown charset or encoding: the header is still there
	h := mail.Header{Header: e.Header}
	m.messageID, _ = h.MessageID()
	if m.messageID == "" {
		m.messageID = fmt.Sprintf("refstore-%d@refstore.invalid", time.Now().UnixNano())
	}
	irt, _ := h.MsgIDList("In-Reply-To")
	refs, _ := h.MsgIDList("References")
	m.inReplyTo, m.refs = strings.Join(irt, " "), strings.Join(refs, " ")
	cands := append([]string{}, irt...)
	for i := len(refs) - 1; i >= 0; i-- {
		cands = append(cands, refs[i])
	}
	b, _ := json.Marshal(cands)
	m.candidates = string(b)
	m.subject, _ = h.Subject()
	m.from = h.Get("From")

	found := false
	_ = e.Walk(func(_ []int, part *gomessage.Entity, err error) error {
		if err != nil || found {
			return nil
		}
		t, _, _ := part.Header.ContentType()
		// A part without Content-Type is text/plain (RFC 2045 §5.2).
		if t == "text/plain" || part.Header.Get("Content-Type") == "" {
			body, _ := io.ReadAll(io.LimitReader(part.Body, 1<<20))
			m.text, found = string(body), true
		}
		return nil
	})
	return m
}

// ---- the store

const schema = `
CREATE TABLE IF NOT EXISTS messages (
	id          INTEGER PRIMARY KEY,
	message_id  TEXT NOT NULL,
	thread_id   INTEGER NOT NULL,
	received_at INTEGER NOT NULL,
	mail_from   TEXT NOT NULL,
	rcpt_to     TEXT NOT NULL,
	subject     TEXT NOT NULL,
	from_hdr    TEXT NOT NULL,
	in_reply_to TEXT NOT NULL,
	refs        TEXT NOT NULL,
	raw         BLOB NOT NULL
) STRICT;
CREATE UNIQUE INDEX IF NOT EXISTS messages_message_id ON messages(message_id);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
	subject, addresses, body,
	content = '', contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);`

const (
	// sqlThread is the first candidate, in order, that is a stored message.
	sqlThread = `SELECT m.thread_id FROM json_each(?) j JOIN messages m ON m.message_id = j.value
		ORDER BY j.key LIMIT 1`
	sqlInsert = `INSERT INTO messages (id, message_id, thread_id, received_at, mail_from, rcpt_to,
		subject, from_hdr, in_reply_to, refs, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlInsertFTS = `INSERT INTO messages_fts (rowid, subject, addresses, body) VALUES (?, ?, ?, ?)`
)

type store struct {
	db                        *sql.DB
	q                         chan *msg
	maxBatch                  int
	thread, insert, insertFTS *sql.Stmt
	next                      int64 // the rowid of the next message: the writer is the only writer
}

func openStore(ctx context.Context, path string, maxBatch int) (*store, error) {
	db, err := sql.Open("sqlite", "file:"+path+
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // the one writer connection
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	st := &store{db: db, q: make(chan *msg, 4*maxBatch), maxBatch: maxBatch}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("schema: %w", err)
	}
	for _, p := range []struct {
		s   **sql.Stmt
		sql string
	}{{&st.thread, sqlThread}, {&st.insert, sqlInsert}, {&st.insertFTS, sqlInsertFTS}} {
		if *p.s, err = db.PrepareContext(ctx, p.sql); err != nil {
			db.Close()
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) + 1 FROM messages`).Scan(&st.next); err != nil {
		db.Close()
		return nil, err
	}
	return st, nil
}

func (st *store) close() error { return st.db.Close() }

// ingest queues m for the writer and waits for its commit.
func (st *store) ingest(ctx context.Context, m *msg) error {
	select {
	case st.q <- m:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-m.done // the writer answers every queued message, also when stopping
}

// run is the writer: it takes the first waiting message and every other
// one queued behind it, stores them in one transaction, commits (one fsync
// of the WAL for all of them), and only then answers them.
func (st *store) run(ctx context.Context) error {
	for {
		select {
		case m := <-st.q:
			st.commit(m)
		case <-ctx.Done():
			for { // what was queued before the stop is committed
				select {
				case m := <-st.q:
					st.commit(m)
				default:
					return nil
				}
			}
		}
	}
}

func (st *store) commit(first *msg) {
	batch := []*msg{first}
take:
	for len(batch) < st.maxBatch {
		select {
		case m := <-st.q:
			batch = append(batch, m)
		default:
			break take
		}
	}
	errs := make([]error, len(batch))
	next := st.next
	err := func() error {
		ctx := context.Background()
		tx, err := st.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for i, m := range batch {
			// A savepoint per message: one failing insert does not fail
			// the batch.
			if _, err := tx.ExecContext(ctx, `SAVEPOINT m`); err != nil {
				return err
			}
			if errs[i] = st.store(ctx, tx, m, next); errs[i] != nil {
				if _, err := tx.ExecContext(ctx, `ROLLBACK TO m`); err != nil {
					return err
				}
			} else {
				next++
			}
			if _, err := tx.ExecContext(ctx, `RELEASE m`); err != nil {
				return err
			}
		}
		return tx.Commit()
	}()
	if err == nil {
		st.next = next
	}
	for i, m := range batch {
		switch {
		case err != nil:
			m.done <- err
		case isDuplicate(errs[i]):
			m.done <- nil // an SMTP retry of a stored message: accepted, stored once
		default:
			m.done <- errs[i]
		}
	}
}

func (st *store) store(ctx context.Context, tx *sql.Tx, m *msg, id int64) error {
	thread := id
	if m.candidates != "" && m.candidates != "[]" {
		err := tx.StmtContext(ctx, st.thread).QueryRowContext(ctx, m.candidates).Scan(&thread)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("thread: %w", err)
		}
	}
	if _, err := tx.StmtContext(ctx, st.insert).ExecContext(ctx, id, m.messageID, thread, m.receivedAt,
		m.mailFrom, m.rcptTo, m.subject, m.from, m.inReplyTo, m.refs, m.raw); err != nil {
		return fmt.Errorf("insert message: %w", err)
	}
	if _, err := tx.StmtContext(ctx, st.insertFTS).ExecContext(ctx, id, m.subject, m.from+" "+m.rcptTo, m.text); err != nil {
		return fmt.Errorf("insert search row: %w", err)
	}
	return nil
}

func isDuplicate(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}
