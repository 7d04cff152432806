// Package store is the only package that speaks SQL. It owns the schema and
// its migrations, the single writer connection and the read-only pool, the
// ingest transaction with its group-commit writer, and every query the
// transports need.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrNotFound is returned when a row does not exist (or is outside the
// caller's grant; the store does not distinguish the two).
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a unique row already exists.
var ErrConflict = errors.New("already exists")

// privateFiles makes the database's files readable by their owner only:
// they hold every message, the webhook secrets and the cursor key, and a
// data directory made by someone else (mkdir, a container volume) may let
// others in. A new database is created 0600, and SQLite gives its -wal and
// -shm files the main file's mode; an existing file that others may read
// is tightened, with a warning.
func privateFiles(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	if runtime.GOOS == "windows" { // no mode bits for others to clear
		return nil
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(name, perm&0o700); err != nil {
				return err
			}
			log.Warn("database file was readable by others; now by its owner only", "file", name, "mode", fmt.Sprintf("%#o", perm))
		}
	}
	return nil
}

// ErrInboxGone is an ingest whose every target inbox was deleted after it
// was resolved (between RCPT and DATA). It is also ErrNotFound.
var ErrInboxGone = fmt.Errorf("every target inbox is gone: %w", ErrNotFound)

// ErrClosed is returned by Ingest and Send once the writer has stopped.
var ErrClosed = errors.New("store: writer stopped")

// Options configure Open.
type Options struct {
	// Path of the SQLite file; created when missing.
	Path string
	// NoFsync trades power-loss durability for speed (synchronous=NORMAL):
	// a crash of the process still loses nothing, a power cut may.
	NoFsync bool
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Rand is the source of randomness for ids and secrets; crypto/rand when nil.
	Rand io.Reader
	// SearchPassRows and SearchPassBytes bound one search-indexing pass
	// (defaults 128 rows, 256 KB of text; see searchindex.go).
	SearchPassRows, SearchPassBytes int
	// ReadConns is the size of the read-only pool (default 4).
	ReadConns int
	// MaxBatch caps how many ingests one group commit takes (default 128).
	MaxBatch int
	// Logger; slog.Default when nil.
	Logger *slog.Logger
	// OnDeferredStored, when set, is told how long each deferred message
	// waited before it was stored (for a metric).
	OnDeferredStored func(waited time.Duration)
	// Retention, when positive, is how long messages are kept, and
	// MaxMessages, when positive, how many each inbox keeps (the newest):
	// the writer deletes the rest in rounds every resolveInterval
	// (retention.go).
	Retention   time.Duration
	MaxMessages int
	// EventRetention, when positive, is how long events are kept: the
	// writer deletes older ones every resolveInterval (SPEC §13,
	// --event-retention).
	EventRetention time.Duration
	// OnBatch, when set, is called after every group commit with the
	// number of requests (ingests, sends) it committed and how long the
	// transaction took, its fsync included.
	OnBatch func(n int, took time.Duration)
	// OnDuplicate, when set, is called once per duplicate delivery that
	// was not stored (for a metric).
	OnDuplicate func()
	// StoreDuplicates stores duplicate deliveries anyway, as copies with
	// the same id (--store-duplicates, SPEC §4).
	StoreDuplicates bool
}

// DB is an open inboxd database.
type DB struct {
	w, r *sql.DB
	url  string  // the database file's URL, without parameters (BackupTo)
	path string  // the database file
	ver  *sql.DB // one connection that only reads PRAGMA data_version (DataVersion)
	// verConn is that connection, held; verEpoch counts the ones held so far.
	verMu    sync.Mutex
	verConn  *sql.Conn
	verStmt  *sql.Stmt // PRAGMA data_version, prepared on verConn
	verEpoch int64
	now      func() time.Time
	log      *slog.Logger
	randMu   sync.Mutex
	rand     io.Reader

	maxBatch         int
	writeQ           chan *writeReq // ingests and sends for the writer (Run)
	stopped          chan struct{}  // closed when the writer's Run returns
	onDeferredStored func(time.Duration)
	onDuplicate      func()
	onBatch          func(n int, took time.Duration)
	eventRetention   time.Duration
	retention        time.Duration
	maxMessages      int
	autoVacuum       bool // the file's auto_vacuum is INCREMENTAL: retention gives pages back

	// The retention round in progress and its plan, only the writer's
	// (retention.go); PruneNow asks for one on pruneNow.
	round           *round
	planned         chan planned
	pruneNow        chan chan Pruned
	storeDuplicates bool

	// searchProbe is the number of matches above which a thread-list
	// search walks the threads newest first instead of collecting every
	// match (thread.go, commonTerm).
	searchProbe int
	probes      probeCache // commonTerm's recent answers
	// compactSegments is the segment count at which retention compacts
	// the full-text index (searchindex.go; tests lower it).
	compactSegments int
	// compactQuiet is how long the writer must have had no request before
	// a compaction slice, compactPatience how long a round waits for that
	// (retention.go, roundWait; tests change both); lastRequest is when the
	// writer last answered one, and compactUnfinished says a round left a
	// compaction under way. Only the writer touches the last two.
	compactQuiet, compactPatience time.Duration
	lastRequest                   time.Time
	compactUnfinished             bool
	// batchExtend is how long a batch goes on taking what queued while it
	// ran (maxBatchExtend; writer.go, commitBatch; tests raise it).
	batchExtend time.Duration

	ws writeStmts // the writer's hot statements, prepared at Open (stmt.go)

	// lastPK is the last messages.pk handed out (insertMessage; writer
	// only). SQLite would give a new row max(pk)+1, reusing the keys of
	// the newest messages once they are deleted (retention of a quiet
	// server deletes all of them); the search index marks its progress by
	// pk (search_index.indexed_through), so a reused key at or below the
	// mark would never be indexed. Open starts it above both.
	lastPK int64
	// lastDeliveryID is the last deliveries.id handed out (Send; writer
	// only), for the same reason: the outbound worker records a relay's
	// answer by the id it claimed, and DeliverLocalDue takes the ids it
	// prepared, so an id reused after its send was deleted (with its inbox)
	// would mark another send as sent without relaying it. A claim lives
	// no longer than the process, so Open starts it at the highest stored.
	lastDeliveryID int64

	// lastEventSeq is the last seq handed out to an event (appendEvent,
	// only in the writer's transactions; read by EventsAppended). The log
	// is keyed by (project_id, seq): no query finds the highest seq of
	// all projects cheaply, so the writer counts (migration 0018).
	lastEventSeq atomic.Int64
	seqAtOpen    int64 // lastEventSeq when Open finished
	// deferredMayExist is false only when deferred_messages is known to
	// be empty: set at Open and before every deferral, cleared by a
	// ResolveDeferred of all inboxes that finds none. While it is false
	// an ingest need not look for a deferred copy of itself.
	deferredMayExist atomic.Bool
	// aliasesMayExist is false while message_aliases is empty (set at
	// Open and before the first alias is recorded): the finder then
	// leaves its alias lookup out (ingest.go, newTxFinder).
	aliasesMayExist atomic.Bool

	bodies bodyPacker

	// search holds the messages_fts rows of the open write transaction;
	// only the holder of the writer connection touches it (see indexLater).
	search []searchRow
	sq     searchQueue // rows committed, not yet indexed (searchindex.go)
	// inboxesChanged is set by a write to the inboxes table in the open
	// write transaction (same rule as search); its commit then moves
	// recipients to a new generation.
	inboxesChanged bool
	recipients     recipientCache // LookupRecipient's answers (inbox.go)
	// othersVersion is PRAGMA data_version on the writer connection as
	// noticeOtherWriters last read it (Run only): on that connection it
	// moves only with another process's commits (the CLI's).
	othersVersion int64

	readMu    sync.RWMutex
	readStmts map[string]*sql.Stmt // queries of the read path, prepared on first use

	keys keyCache // Authenticate's
	// keyUses holds, per key id, the unix ms noteKeyUse last wrote.
	keyUses sync.Map

	changeMu sync.Mutex
	// changed[i] is closed and replaced by a commit that wakes bit i of a
	// wakeSet: every commit, one that may have changed the outbound queue,
	// webhook deliveries or endpoints.
	changed [wakeKinds]chan struct{}
	// wakes is what the transaction under way may have changed for the
	// workers (writer goroutine only, like search).
	wakes wakeSet
	// failNext lets tests force the next batch commit to fail (the 451 path).
	failNext func() error
}

// walSizeLimit is the size the WAL file is cut back to once a checkpoint
// has emptied it (journal_size_limit).
const walSizeLimit = 64 << 20

// Open opens (creating if needed) the database at opts.Path and brings its
// schema up to date.
func Open(ctx context.Context, opts Options) (*DB, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.ReadConns <= 0 {
		// Readers are CPU-bound in the pure-Go SQLite: a few per core keep
		// every core busy while some wait on I/O.
		opts.ReadConns = max(4, 2*runtime.GOMAXPROCS(0))
	}
	// Under load a pass runs after a batch and holds the writer: 512 rows
	// of 4 KB mail took about 45 ms, 1 MB of 64 KB mail's text 33 ms,
	// and the ingests queued behind it made the p99. A quarter of that
	// leaves a few more segments for automerge (12 against 9 after 13,000
	// messages) and, measured, lower CPU per message too.
	if opts.SearchPassRows <= 0 {
		opts.SearchPassRows = 128
	}
	if opts.SearchPassBytes <= 0 {
		opts.SearchPassBytes = 256 << 10
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 128
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	sync := "FULL"
	if opts.NoFsync {
		sync = "NORMAL"
	}
	path, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := privateFiles(path, opts.Logger); err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	base := (&url.URL{Scheme: "file", OmitHost: true, Path: path}).String()
	common := "_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)"
	// temp_store=MEMORY keeps the statement and savepoint journals (every
	// ingest runs under a savepoint) in memory: spilled to a temp file they
	// were an eighth of the ingest CPU in write syscalls. They hold the old
	// contents of pages a batch changes, not the new ones it appends.
	// auto_vacuum first: a new database frees the pages pruning empties
	// (incremental_vacuum after retention), and the mode can only be
	// chosen before the file's first page is written (WAL writes it); an
	// older database keeps its mode, so there the pragma does nothing.
	// journal_size_limit: SQLite reuses its WAL file at the size it once
	// reached, and one large transaction (a migration: 5.8 GB at 1M
	// messages) would leave that much disk taken until the server stops;
	// with the limit the file is cut back once a checkpoint has emptied it.
	// Everyday WALs stay below it (autocheckpoint at 1,000 pages).
	writer := base + "?_pragma=auto_vacuum(INCREMENTAL)&" + common + "&_pragma=synchronous(" + sync + ")&_pragma=temp_store(MEMORY)&_pragma=journal_size_limit(" + fmt.Sprint(walSizeLimit) + ")&_txlock=immediate"
	if !opts.NoFsync {
		// Each commit's WAL frames in one write (walvfs.go), which needs the
		// sync at every commit that synchronous=FULL gives.
		if err := registerWALVFS(); err != nil {
			return nil, fmt.Errorf("open writer: %w", err)
		}
		writer += "&vfs=" + walVFSName
	}
	w, err := sql.Open("sqlite", writer)
	if err != nil {
		return nil, fmt.Errorf("open writer: %w", err)
	}
	// One writer connection: SQLite has one writer anyway, and holding it in
	// one place makes "immediate" transactions queue in Go, not in busy loops.
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	db := &DB{
		w: w, url: base, path: path, now: opts.Now, rand: opts.Rand, log: opts.Logger,
		maxBatch: opts.MaxBatch, onDeferredStored: opts.OnDeferredStored,
		onDuplicate: opts.OnDuplicate, storeDuplicates: opts.StoreDuplicates, onBatch: opts.OnBatch, eventRetention: opts.EventRetention,
		retention: opts.Retention, maxMessages: opts.MaxMessages,
		writeQ:   make(chan *writeReq, 256),
		stopped:  make(chan struct{}),
		planned:  make(chan planned, 1),
		pruneNow: make(chan chan Pruned),
		bodies:   newBodyPacker(),
		sq:       newSearchQueue(opts.SearchPassRows, opts.SearchPassBytes),

		readStmts: map[string]*sql.Stmt{},

		searchProbe:     2000,
		compactSegments: compactSegments,
		compactQuiet:    compactQuiet,
		compactPatience: resolveInterval,
		batchExtend:     maxBatchExtend,
	}
	for i := range db.changed {
		db.changed[i] = make(chan struct{})
	}
	if err := db.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	var vacuum int
	if err := w.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&vacuum); err != nil {
		w.Close()
		return nil, fmt.Errorf("auto_vacuum: %w", err)
	}
	db.autoVacuum = vacuum == 2 // INCREMENTAL
	if err := db.prepareWrites(ctx); err != nil {
		w.Close()
		return nil, err
	}
	var lastSeq int64
	if err := w.QueryRowContext(ctx, sqlLastEventSeq).Scan(&lastSeq); err != nil {
		w.Close()
		return nil, fmt.Errorf("event log: %w", err)
	}
	// A restored copy of the database has not seen the seqs handed out
	// after the copy was taken, and readers may hold cursors naming them.
	// So each start counts on from the clock (seqClock) when it is ahead:
	// the first event after a restore is numbered past every one handed
	// out before it, and such a cursor names no event (invalid_cursor)
	// instead of a newer one past events it never read.
	if c := seqClock(db.now()); c < maxSeqClock {
		lastSeq = max(lastSeq, c)
	} else {
		db.log.Warn("the clock is past 2109: event seqs count on from the log, not the clock", "now", db.now().UTC())
	}
	db.lastEventSeq.Store(lastSeq)
	db.seqAtOpen = lastSeq
	var deferred, aliases bool
	if err := w.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM deferred_messages), EXISTS (SELECT 1 FROM message_aliases)`).Scan(&deferred, &aliases); err != nil {
		w.Close()
		return nil, fmt.Errorf("deferred messages and aliases: %w", err)
	}
	db.deferredMayExist.Store(deferred)
	db.aliasesMayExist.Store(aliases)
	// The keys new messages and deliveries take, and the search index's
	// mark: messages stored but not indexed before a stop are indexed by
	// Run, or by the first search.
	var through, lastPK int64
	if err := w.QueryRowContext(ctx, `SELECT indexed_through, (SELECT coalesce(max(pk), 0) FROM messages),
		(SELECT coalesce(max(id), 0) FROM deliveries) FROM search_index`).Scan(&through, &lastPK, &db.lastDeliveryID); err != nil {
		w.Close()
		return nil, fmt.Errorf("search index and keys: %w", err)
	}
	db.lastPK = max(through, lastPK)
	if through < lastPK {
		db.sq.committed = 1
		if err := db.rebuildSearch(ctx); err != nil {
			w.Close()
			return nil, err
		}
	}
	r, err := sql.Open("sqlite", base+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open readers: %w", err)
	}
	r.SetMaxOpenConns(opts.ReadConns)
	r.SetMaxIdleConns(opts.ReadConns)
	db.r = r
	ver, err := sql.Open("sqlite", base+"?"+common+"&_pragma=query_only(1)")
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open version connection: %w", err)
	}
	ver.SetMaxOpenConns(1)
	ver.SetMaxIdleConns(1)
	ver.SetConnMaxIdleTime(0)
	ver.SetConnMaxLifetime(0)
	db.ver = ver
	return db, nil
}

// Close closes the pools. Stop the writer (cancel Run's context and wait)
// first so that nothing acknowledged is still queued.
func (db *DB) Close() error {
	db.verMu.Lock()
	db.closeVersionConn()
	db.verMu.Unlock()
	return errors.Join(db.ver.Close(), db.r.Close(), db.w.Close())
}

// closeVersionConn gives DataVersion's connection back; verMu is held.
func (db *DB) closeVersionConn() {
	if db.verConn != nil {
		db.verStmt.Close()
		db.verConn.Close()
		db.verConn, db.verStmt = nil, nil
	}
}

// DataVersion returns a number that changes whenever anything is committed
// to the database, by this process or another one (the CLI, say): PRAGMA
// data_version, asked always on the same connection, which never writes.
// A value computed from the database stays right for as long as the
// version is the same (compare for equality only). A new connection
// counts from the start again, so the version also carries how many
// connections came before: after an error the next call opens another.
func (db *DB) DataVersion(ctx context.Context) (int64, error) {
	db.verMu.Lock()
	defer db.verMu.Unlock()
	if db.verConn == nil {
		c, err := db.ver.Conn(ctx)
		if err != nil {
			return 0, fmt.Errorf("data version: %w", err)
		}
		st, err := c.PrepareContext(ctx, `PRAGMA data_version`)
		if err != nil {
			c.Close()
			return 0, fmt.Errorf("data version: %w", err)
		}
		db.verConn, db.verStmt = c, st
		db.verEpoch++
	}
	var v int64
	if err := db.verStmt.QueryRowContext(ctx).Scan(&v); err != nil {
		db.closeVersionConn()
		return 0, fmt.Errorf("data version: %w", err)
	}
	return db.verEpoch<<40 | v&(1<<40-1), nil
}

// migrate applies the embedded migrations newer than PRAGMA user_version,
// each in its own transaction together with the version bump (migrate.go
// reads the directives a migration may hold).
func (db *DB) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	var current int
	if err := db.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	// A database a newer inboxd migrated has tables and rules this one
	// does not know: refuse it rather than write beside them.
	if latest, _ := strconv.Atoi(strings.SplitN(filepath.Base(names[len(names)-1]), "_", 2)[0]); current > latest {
		return fmt.Errorf("the database's schema (version %d) is newer than this inboxd's (%d): run the newer inboxd, or restore a backup taken before the upgrade", current, latest)
	}
	existing := current > 0 // a new database's migrations are not worth a log line
	for _, name := range names {
		n, err := strconv.Atoi(strings.SplitN(filepath.Base(name), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: bad name", name)
		}
		if n <= current {
			continue
		}
		body, err := migrationFiles.ReadFile(name)
		if err != nil {
			return fmt.Errorf("read migration %s: %w", name, err)
		}
		if err := db.applyMigration(ctx, n, filepath.Base(name), string(body), existing); err != nil {
			return fmt.Errorf("apply migration %s: %w", name, err)
		}
		current = n
	}
	return nil
}

// isConstraint reports whether err is a SQLite UNIQUE/PRIMARY KEY violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// Now returns the store's clock reading.
func (db *DB) Now() time.Time { return db.now() }

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// SchemaVersion returns PRAGMA user_version.
func (db *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := db.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// Ping checks that both pools answer (readiness).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.r.PingContext(ctx); err != nil {
		return err
	}
	return db.w.PingContext(ctx)
}
