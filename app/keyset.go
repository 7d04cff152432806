package app

import (
	"time"

	"github.com/inboxd/inboxd/store"
)

// timeKeyPageSize is the default page size of the lists below one
// resource read by (time, id), such as approvals and webhook deliveries.
const timeKeyPageSize = 25

// timeKeyPage is a page of a list below one resource, read by a (time,
// id) keyset key in the order fetch reads it: the limit checked, the
// cursor decoded for scope, and one row read past the page so that
// has_more is exact. The operation has checked the caller's scope and
// loaded the resource within its grant already.
func timeKeyPage[R any](a *App, p PageParams, scope CursorScope,
	fetch func(after *store.TimeKey, n int) ([]R, error), key func(R) (time.Time, string)) (Page[R], error) {
	limit, err := p.Size(timeKeyPageSize)
	if err != nil {
		return Page[R]{}, err
	}
	after, err := Position[store.TimeKey](a, scope, p.Cursor)
	if err != nil {
		return Page[R]{}, err
	}
	rows, err := fetch(after, limit+1)
	if err != nil {
		return Page[R]{}, err
	}
	return NewPage(a, rows, limit, scope, func(row R) any {
		at, id := key(row)
		return store.TimeKey{At: at.UnixMilli(), ID: id}
	})
}
