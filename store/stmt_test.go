package store

import (
	"reflect"
	"testing"
)

// Every statement of writeStmts is prepared at Open: a field left out of
// prepareWrites's table would be nil, and the first transaction to run it
// would panic.
func TestWriteStmtsPrepared(t *testing.T) {
	db, _ := openTest(t)
	v := reflect.ValueOf(db.ws)
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("writeStmts.%s is not prepared", v.Type().Field(i).Name)
		}
	}
}
