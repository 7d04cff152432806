package app

import (
	"time"

	"github.com/inboxd/inboxd/store"
)

// PageParams are a list request's paging parameters as the caller gave
// them. Limit stays text so that the whole rule, the integer included,
// is checked here, and only once the operation has checked the caller's
// scope: a surface that parsed it first would answer a bad limit before
// a missing scope.
type PageParams struct {
	Limit  string // "" for the list's default
	Cursor string // "" for the first page
}

// Size is the page size asked for: def when no limit is given, otherwise
// an integer from 1 to 100 (SPEC §5.2); anything else is invalid_request
// naming limit, never a silent clamp.
func (p PageParams) Size(def int) (int, error) {
	if p.Limit == "" {
		return def, nil
	}
	n, ok := decimal(p.Limit)
	if !ok || n < 1 || n > 100 {
		return 0, Invalidf("limit", "limit must be an integer from 1 to 100.")
	}
	return int(n), nil
}

// Page is one page of a list: its rows, whether more follow (exactly:
// a list is read one row past the page), and the signed position of its
// last row to read on from ("" on the last page).
type Page[R any] struct {
	Rows    []R
	Next    string
	HasMore bool
}

// NewPage is the page of rows fetched with limit+1: the first limit of
// them, has_more exact, and the cursor of the last row shown (position
// gives its keyset key).
func NewPage[R any](a *App, rows []R, limit int, scope CursorScope, position func(R) any) (Page[R], error) {
	p := Page[R]{Rows: rows[:min(len(rows), limit)]}
	if len(rows) > limit {
		next, err := a.encodeCursor(scope, position(rows[limit-1]))
		if err != nil {
			return Page[R]{}, err
		}
		p.Next, p.HasMore = next, true
	}
	return p, nil
}

// grantedPageSize is the default page size of the project's own lists.
const grantedPageSize = 25

// GrantedPage is a page of one of the project's own lists (inboxes, keys,
// webhook endpoints), oldest first by created_at, holding only the rows
// the caller's grant covers (visible). fetch reads n rows after a
// position; rows outside the grant are skipped and more are read in their
// place, so a page is full and has_more exact whatever the caller may not
// see, and nothing tells it that there were rows it could not see.
func GrantedPage[R any](a *App, c Caller, list string, p PageParams,
	fetch func(after *store.TimeKey, n int) ([]R, error), visible func(R) bool, created func(R) (time.Time, string)) (Page[R], error) {
	position := func(row R) store.TimeKey {
		at, id := created(row)
		return store.TimeKey{At: at.UnixMilli(), ID: id}
	}
	limit, err := p.Size(grantedPageSize)
	if err != nil {
		return Page[R]{}, err
	}
	scope := CursorScope{Project: c.ProjectID, List: list}
	after, err := Position[store.TimeKey](a, scope, p.Cursor)
	if err != nil {
		return Page[R]{}, err
	}
	var rows []R
	for len(rows) <= limit {
		batch, err := fetch(after, limit+1)
		if err != nil {
			return Page[R]{}, err
		}
		for _, row := range batch {
			if visible(row) && len(rows) <= limit {
				rows = append(rows, row)
			}
		}
		if len(batch) <= limit {
			break // the end of the list
		}
		p := position(batch[len(batch)-1])
		after = &p
	}
	return NewPage(a, rows, limit, scope, func(row R) any { return position(row) })
}
