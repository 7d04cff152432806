package store

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite writes a commit's WAL frames one system call at a time, two per
// page (the frame's 24-byte header, then the page), and pwrite's cost is
// per call far more than per byte: a 4 KB ingest batch of ~35 pages cost
// the writer about 180 µs of system time against 24 µs for the same bytes
// in one call, a quarter of the writer's CPU per message.
//
// walVFS is SQLite's default VFS with the WAL file's writes gathered: a
// write that continues (or falls within) the run of bytes not yet written
// is copied to it, and the run goes to the file in one write before
// anything that could need it there — a sync, a read, the file's size, a
// truncate, a file control. Every other operation is the default VFS's
// own (locking, shared memory, the database file's I/O).
//
// What the run holds belongs to the write transaction in progress, and
// lives no longer than it:
//
//   - Committed, it is on the file: a commit's own frame goes to the file
//     with the run as SQLite writes it (walWrite), so a failure fails the
//     commit, and before SQLite publishes the commit in the WAL index; no
//     other connection can look for a frame still here. (The writer also
//     runs with synchronous=FULL, DB.Open using this VFS only with fsync
//     on, whose sync writes the run too; and the shared-memory barrier
//     SQLite passes before it publishes writes whatever this connection's
//     run holds.)
//   - Not committed (frames a transaction spilled, then rolled back), it
//     is dropped when the transaction lets go of the WAL's write lock:
//     written later, it would land on frames another connection or the
//     CLI's process committed meanwhile at the same offsets.
//   - A write of the run that fails keeps it: the failure is reported
//     where it happened, and the next flush (at the latest, the commit's
//     sync) writes all of it again or fails the commit. Dropped, a
//     statement could fail, be rolled back alone, and the transaction
//     commit without frames the WAL index still points to.
const walVFSName = "inboxd-wal"

// walWriteLock is SQLite's WAL_WRITE_LOCK, the first of the shared-memory
// locks: held by the one connection writing the WAL.
const walWriteLock = 0

// walRunMax bounds a file's gathered run (a migration's large transactions
// spill many megabytes of frames).
const walRunMax = 1 << 20

// unixWriteMax is the most the unix VFS writes in one call: it takes the
// length modulo 128 KiB (SQLite's own writes are at most a page).
const unixWriteMax = 1<<17 - 4096

// Everything SQLite reads through a pointer (the VFS, its name, the method
// tables, the run it is handed to write) is in SQLite's memory, not Go's:
// the transpiled C turns those uintptrs back into pointers, which Go's
// pointer checks (-race) refuse for Go memory.
var walVFS struct {
	once sync.Once
	err  error
	unix uintptr // SQLite's default VFS

	mu         sync.Mutex
	walMethods map[uintptr]uintptr  // our WAL files' method table, by the default VFS's own
	dbMethods  map[uintptr]uintptr  // our database files' method table, likewise
	files      map[uintptr]*walFile // WAL files, by sqlite3_file
	dbs        map[uintptr]*dbFile  // database files, by sqlite3_file
}

// walFile is the gathered run of one open WAL file.
type walFile struct {
	orig *sqlite3.Tsqlite3_io_methods
	db   string    // the database's name, the file's without "-wal"
	conn *libc.TLS // the connection's (modernc gives each its own)
	buf  uintptr   // walRunMax bytes, allocated at the first write
	// commit: this hold of the write lock has written a commit's frame
	// header; what follows it goes to the file as it is written (walWrite).
	commit bool
	off    int64 // file offset of the run's first byte
	n      int   // bytes in the run
}

// dbFile is an open database file, whose shared-memory locks say when a
// write transaction ends.
type dbFile struct {
	orig *sqlite3.Tsqlite3_io_methods
	name string
	conn *libc.TLS
}

// registerWALVFS registers walVFS with SQLite once.
func registerWALVFS() error {
	walVFS.once.Do(func() { walVFS.err = registerWALVFSOnce() })
	return walVFS.err
}

func registerWALVFSOnce() error {
	tls := libc.NewTLS()
	defer tls.Close()
	unix := sqlite3.Xsqlite3_vfs_find(tls, 0)
	if unix == 0 {
		return fmt.Errorf("register %s VFS: no default VFS", walVFSName)
	}
	name, err := libc.CString(walVFSName)
	if err != nil {
		return fmt.Errorf("register %s VFS: %w", walVFSName, err)
	}
	p := libc.Xcalloc(tls, 1, types.Size_t(unsafe.Sizeof(sqlite3.Tsqlite3_vfs{})))
	if p == 0 {
		return fmt.Errorf("register %s VFS: out of memory", walVFSName)
	}
	vfs := (*sqlite3.Tsqlite3_vfs)(cptr(p))
	*vfs = *(*sqlite3.Tsqlite3_vfs)(cptr(unix))
	vfs.FpNext = 0
	vfs.FzName = name
	vfs.FxOpen = fnptr(walOpen)
	walVFS.unix = unix
	walVFS.walMethods = map[uintptr]uintptr{}
	walVFS.dbMethods = map[uintptr]uintptr{}
	walVFS.files = map[uintptr]*walFile{}
	walVFS.dbs = map[uintptr]*dbFile{}
	if rc := sqlite3.Xsqlite3_vfs_register(tls, p, 0); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("register %s VFS: SQLite error %d", walVFSName, rc)
	}
	return nil
}

// cptr is the memory at an address in SQLite's memory. Going through the
// variable's address rather than converting the uintptr keeps go vet's
// unsafeptr check meaningful for the rest of the package.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// fnptr is a Go function as the C function pointer the transpiled SQLite
// calls (how modernc.org/sqlite's own vfs package fills its methods).
func fnptr(f any) uintptr { return (*[2]uintptr)(unsafe.Pointer(&f))[1] }

func walOpen(tls *libc.TLS, pVfs, zName, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	fp := (*sqlite3.Tsqlite3_vfs)(cptr(walVFS.unix)).FxOpen
	rc := (*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&fp)))(tls, walVFS.unix, zName, pFile, flags, pOutFlags)
	file := (*sqlite3.Tsqlite3_file)(cptr(pFile))
	wal, db := flags&sqlite3.SQLITE_OPEN_WAL != 0, flags&sqlite3.SQLITE_OPEN_MAIN_DB != 0
	if rc != sqlite3.SQLITE_OK || !wal && !db || file.FpMethods == 0 || zName == 0 {
		return rc
	}
	walVFS.mu.Lock()
	defer walVFS.mu.Unlock()
	tables, wrap := walVFS.dbMethods, wrapDBMethods
	if wal {
		tables, wrap = walVFS.walMethods, wrapWALMethods
	}
	ours, ok := tables[file.FpMethods]
	if !ok {
		if ours = libc.Xcalloc(tls, 1, types.Size_t(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{}))); ours == 0 {
			return sqlite3.SQLITE_OK // the file stays the default VFS's: nothing gathered
		}
		m := (*sqlite3.Tsqlite3_io_methods)(cptr(ours))
		*m = *(*sqlite3.Tsqlite3_io_methods)(cptr(file.FpMethods))
		wrap(m)
		tables[file.FpMethods] = ours
	}
	orig := (*sqlite3.Tsqlite3_io_methods)(cptr(file.FpMethods))
	name := libc.GoString(zName)
	if wal {
		walVFS.files[pFile] = &walFile{orig: orig, db: strings.TrimSuffix(name, "-wal"), conn: tls}
	} else {
		walVFS.dbs[pFile] = &dbFile{orig: orig, name: name, conn: tls}
	}
	file.FpMethods = ours
	return rc
}

func wrapWALMethods(m *sqlite3.Tsqlite3_io_methods) {
	m.FxWrite = fnptr(walWrite)
	m.FxRead = fnptr(walRead)
	m.FxSync = fnptr(walSync)
	m.FxTruncate = fnptr(walTruncate)
	m.FxFileSize = fnptr(walFileSize)
	m.FxFileControl = fnptr(walFileControl)
	m.FxClose = fnptr(walClose)
}

func wrapDBMethods(m *sqlite3.Tsqlite3_io_methods) {
	m.FxShmLock = fnptr(dbShmLock)
	m.FxShmBarrier = fnptr(dbShmBarrier)
	m.FxClose = fnptr(dbClose)
}

// dbShmBarrier writes the runs of the database's WAL before SQLite goes
// on to publish what it wrote in the WAL index, which it does after a
// barrier. With synchronous=FULL the commit's sync has written them
// already; this keeps a connection that runs without that sync
// (synchronous=NORMAL set by hand, psow=0's padding after the sync) from
// publishing frames that are not on the file. A barrier cannot fail: a
// run that cannot be written stays, for the next flush.
func dbShmBarrier(tls *libc.TLS, pFile uintptr) {
	walVFS.mu.Lock()
	d := walVFS.dbs[pFile]
	var runs []walRun
	for p, w := range walVFS.files {
		if w.db == d.name && w.conn == d.conn && w.n > 0 { // this connection's WAL: another's run is its own goroutine's
			runs = append(runs, walRun{p, w})
		}
	}
	walVFS.mu.Unlock()
	for _, r := range runs {
		r.w.flush(tls, r.pFile)
	}
	fp := d.orig.FxShmBarrier
	(*(*func(*libc.TLS, uintptr))(unsafe.Pointer(&fp)))(tls, pFile)
}

// walRun is an open WAL file with bytes in its run.
type walRun struct {
	pFile uintptr
	w     *walFile
}

// dbShmLock drops the runs of the database's WAL before its write lock
// goes: what they hold then was never committed (see walVFSName).
func dbShmLock(tls *libc.TLS, pFile uintptr, ofst, n, flags int32) int32 {
	walVFS.mu.Lock()
	d := walVFS.dbs[pFile]
	if flags&sqlite3.SQLITE_SHM_UNLOCK != 0 && flags&sqlite3.SQLITE_SHM_EXCLUSIVE != 0 && ofst <= walWriteLock && walWriteLock < ofst+n {
		for _, w := range walVFS.files {
			// Any connection's: only the lock's holder can have a run.
			if w.db == d.name && (w.n != 0 || w.commit) {
				w.n, w.commit = 0, false
			}
		}
	}
	walVFS.mu.Unlock()
	fp := d.orig.FxShmLock
	return (*(*func(*libc.TLS, uintptr, int32, int32, int32) int32)(unsafe.Pointer(&fp)))(tls, pFile, ofst, n, flags)
}

func dbClose(tls *libc.TLS, pFile uintptr) int32 {
	walVFS.mu.Lock()
	d := walVFS.dbs[pFile]
	delete(walVFS.dbs, pFile)
	walVFS.mu.Unlock()
	fp := d.orig.FxClose
	return (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&fp)))(tls, pFile)
}

func walFileOf(pFile uintptr) *walFile {
	walVFS.mu.Lock()
	defer walVFS.mu.Unlock()
	return walVFS.files[pFile]
}

// write is the unix VFS's write of n bytes at p to the file at off, in
// pieces it takes.
func (w *walFile) write(tls *libc.TLS, pFile, p uintptr, n int, off int64) int32 {
	fp := w.orig.FxWrite
	write := *(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&fp))
	for n > 0 {
		k := min(n, unixWriteMax)
		if rc := write(tls, pFile, p, int32(k), off); rc != sqlite3.SQLITE_OK {
			return rc
		}
		p, n, off = p+uintptr(k), n-k, off+int64(k)
	}
	return sqlite3.SQLITE_OK
}

// flush writes the run to the file. A failed write keeps the run, to be
// written again by the next flush (see walVFSName).
func (w *walFile) flush(tls *libc.TLS, pFile uintptr) int32 {
	if w.n == 0 {
		return sqlite3.SQLITE_OK
	}
	rc := w.write(tls, pFile, w.buf, w.n, w.off)
	if rc == sqlite3.SQLITE_OK {
		w.n = 0
	}
	return rc
}

// walFrameHeader is the size of a WAL frame's header, which SQLite writes
// on its own before the frame's page; its bytes 4–7 hold the database's
// size in pages after a commit, for the frame that ends one, and 0 for
// every other.
const walFrameHeader = 24

// walWrite gathers the write into the run, until a commit's frame: from
// its page on (SQLite writes the page right after the header, which is
// gathered with the rest), everything this hold of the write lock writes
// goes to the file as it is written, so that a failure fails SQLite's
// write of the commit, as it would without the run, on every path that
// publishes one: a commit without a sync, the padding SQLite writes after
// one (psow=0, in pieces that need not start at a frame), and the
// checksums it rewrites (a header each, with no page after it).
func walWrite(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	w := walFileOf(pFile)
	src := unsafe.Slice((*byte)(cptr(zBuf)), iAmt)
	commitHeader := !w.commit && iAmt == walFrameHeader && binary.BigEndian.Uint32(src[4:8]) != 0
	w.commit = w.commit || commitHeader
	if w.buf == 0 {
		if w.buf = libc.Xmalloc(tls, walRunMax); w.buf == 0 {
			return w.write(tls, pFile, zBuf, int(iAmt), iOfst)
		}
	}
	// Within the run or just past it: into the run. Anything else: the run
	// goes first, and this write starts the next one.
	at := iOfst - w.off
	if w.n == 0 || at < 0 || at > int64(w.n) || at+int64(iAmt) > walRunMax {
		if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
			return rc
		}
		if int(iAmt) > walRunMax {
			return w.write(tls, pFile, zBuf, int(iAmt), iOfst)
		}
		w.off, at = iOfst, 0
	}
	run := unsafe.Slice((*byte)(cptr(w.buf)), walRunMax)
	copy(run[at:], src)
	w.n = max(w.n, int(at)+int(iAmt))
	if w.commit && !commitHeader {
		return w.flush(tls, pFile)
	}
	return sqlite3.SQLITE_OK
}

func walRead(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	w := walFileOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	fp := w.orig.FxRead
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&fp)))(tls, pFile, zBuf, iAmt, iOfst)
}

func walSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	w := walFileOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	fp := w.orig.FxSync
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&fp)))(tls, pFile, flags)
}

func walTruncate(tls *libc.TLS, pFile uintptr, size int64) int32 {
	w := walFileOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	fp := w.orig.FxTruncate
	return (*(*func(*libc.TLS, uintptr, int64) int32)(unsafe.Pointer(&fp)))(tls, pFile, size)
}

func walFileSize(tls *libc.TLS, pFile, pSize uintptr) int32 {
	w := walFileOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	fp := w.orig.FxFileSize
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&fp)))(tls, pFile, pSize)
}

func walFileControl(tls *libc.TLS, pFile uintptr, op int32, pArg uintptr) int32 {
	w := walFileOf(pFile)
	if rc := w.flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	fp := w.orig.FxFileControl
	return (*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&fp)))(tls, pFile, op, pArg)
}

// walClose drops the run: SQLite closes a WAL outside any write
// transaction, so whatever is left was never committed.
func walClose(tls *libc.TLS, pFile uintptr) int32 {
	walVFS.mu.Lock()
	w := walVFS.files[pFile]
	delete(walVFS.files, pFile)
	walVFS.mu.Unlock()
	if w.buf != 0 {
		libc.Xfree(tls, w.buf)
	}
	fp := w.orig.FxClose
	return (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&fp)))(tls, pFile)
}
