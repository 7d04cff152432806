package store

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Every connection this package opens (and every other connection of the
// "sqlite" driver in the process) runs with SQLite's query planner
// stability guarantee (SQLITE_DBCONFIG_ENABLE_QPSG): a statement's plan
// never depends on the values bound to it.
//
// Without it, SQLite 3.54 re-prepares a statement on the first step after
// any new binding of a parameter the planner looked at, and it looks at
// the right side of every `column = ?` term that some candidate plan does
// not serve from an index (whereLoopOutputAdjust's truth-probability
// heuristic). FTS5's own segment lookup, `SELECT pgno FROM …_idx WHERE
// segid=? AND term<=? ORDER BY term DESC LIMIT 1`, is such a statement and
// runs once per segment for every term a full-text query opens: on a
// 1M-message inbox it was re-prepared thousands of times per thread-list
// search, a quarter of the CPU of that route (bench/REPORT.md, issue 18).
// Nothing here depends on value-dependent plans: there are no sqlite_stat4
// samples (which the guarantee also sets aside) and no LIKE with a bound
// pattern.
//
// modernc.org/sqlite has no DSN parameter for the setting, so the hook
// calls sqlite3_db_config on the driver connection's handle, which it
// reads from the driver's unexported field; if a driver upgrade moves it,
// every open fails with errQPSG instead of silently running without.
func init() { sqlite.RegisterConnectionHook(enableQPSG) }

var errQPSG = errors.New("cannot set the query planner stability guarantee on a modernc.org/sqlite connection (has the driver changed?)")

func enableQPSG(conn sqlite.ExecQuerierContext, _ string) error {
	on, err := qpsg(conn, 1)
	if err != nil {
		return err
	}
	if !on {
		return errQPSG
	}
	return nil
}

// qpsg calls sqlite3_db_config(SQLITE_DBCONFIG_ENABLE_QPSG, onoff, &res)
// on a modernc.org/sqlite driver connection: onoff 1 sets the guarantee, 0
// clears it, -1 leaves it; res, returned, is the setting after the call.
func qpsg(conn any, onoff int32) (bool, error) {
	v := reflect.ValueOf(conn)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false, errQPSG
	}
	h := v.Elem().FieldByName("db") // the driver's *sqlite3 handle
	if !h.IsValid() || h.Kind() != reflect.Uintptr || h.Uint() == 0 {
		return false, errQPSG
	}
	tls := libc.NewTLS() // SQLite connections are serialized (SQLITE_THREADSAFE=1): any thread may call
	defer tls.Close()
	// The variadic arguments (int onoff, int *pRes), one 8-byte slot each
	// as libc.VaList lays them out, then the int pRes points at.
	const slot = 8
	mem := libc.Xmalloc(tls, 3*slot)
	if mem == 0 {
		return false, fmt.Errorf("%w: out of memory", errQPSG)
	}
	defer libc.Xfree(tls, mem)
	res := mem + 2*slot
	*(*int32)(unsafe.Add(unsafe.Pointer(nil), res)) = -1
	if rc := sqlite3.Xsqlite3_db_config(tls, uintptr(h.Uint()), sqlite3.SQLITE_DBCONFIG_ENABLE_QPSG, libc.VaList(mem, onoff, res)); rc != sqlite3.SQLITE_OK {
		return false, fmt.Errorf("%w: sqlite3_db_config returned %d", errQPSG, rc)
	}
	switch *(*int32)(unsafe.Add(unsafe.Pointer(nil), res)) {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, errQPSG
}
