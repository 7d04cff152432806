package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

// writePage answers a list fetched with limit+1 rows: the first limit
// rendered, has_more exact, and next_cursor the signed position of the last
// row shown.
func writePage[R, T any](s *Server, w http.ResponseWriter, r *http.Request, rows []R, limit int, scope cursorScope,
	render func(R) T, position func(R) any) {
	out, err := buildPage(s, rows, limit, scope, render, position)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, ok := any((*T)(nil)).(jsonAppender); ok {
		writeJSON(w, http.StatusOK, &out) // the list's appendJSON needs elements that append themselves
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// writeGrantedPage answers a page of one of the project's own lists
// (inboxes, keys, webhook endpoints), oldest first by created_at, holding
// only the rows the key's grant covers (visible). fetch reads n rows after
// a position; rows outside the grant are skipped and more are read in
// their place, so a page is full and has_more exact whatever the key may
// not see.
func writeGrantedPage[R, T any](s *Server, w http.ResponseWriter, r *http.Request, list string,
	fetch func(after *store.TimeKey, n int) ([]R, error), visible func(R) bool, render func(R) T, created func(R) (time.Time, string)) {
	position := func(row R) store.TimeKey {
		at, id := created(row)
		return store.TimeKey{At: at.UnixMilli(), ID: id}
	}
	limit, err := listLimit(r, 25)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	scope := cursorScope{Project: callerFrom(r).ProjectID, List: list}
	after, err := cursorAfter[store.TimeKey](s, r, scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var rows []R
	for len(rows) <= limit {
		batch, err := fetch(after, limit+1)
		if err != nil {
			s.writeError(w, r, err)
			return
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
	writePage(s, w, r, rows, limit, scope, render, func(row R) any { return position(row) })
}

// buildPage is writePage's list object.
func buildPage[R, T any](s *Server, rows []R, limit int, scope cursorScope, render func(R) T, position func(R) any) (listJSON[T], error) {
	out := listJSON[T]{Data: make([]T, 0, min(len(rows), limit))}
	for _, row := range rows[:min(len(rows), limit)] {
		out.Data = append(out.Data, render(row))
	}
	if len(rows) > limit {
		out.HasMore = true
		if err := s.setCursor(&out.NextCursor, scope, position(rows[limit-1])); err != nil {
			return listJSON[T]{}, err
		}
	}
	return out, nil
}

// poll runs query until it finds something or wait runs out (wait 0:
// once). The change signal is taken before each query, so a commit between
// the query and the wait is never missed; waiters are woken by commits,
// never by polling the database.
func (s *Server) poll(r *http.Request, wait time.Duration, query func() (found bool, err error)) error {
	var deadline <-chan time.Time
	if wait > 0 {
		s.log.Debug("api: long-poll", "path", r.URL.Path, "wait", wait)
		timer := time.NewTimer(wait)
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		changed := s.db.Changed()
		found, err := query()
		if err != nil || found || deadline == nil {
			return err
		}
		if s.pollWaiting != nil {
			s.pollWaiting()
		}
		select {
		case <-changed:
		case <-deadline:
			return nil
		case <-s.draining:
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
}

// cursorAfter decodes the ?cursor= of a list into its keyset position (nil when
// absent).
func cursorAfter[K any](s *Server, r *http.Request, scope cursorScope) (*K, error) {
	c := r.URL.Query().Get("cursor")
	if c == "" {
		return nil, nil
	}
	k := new(K)
	if err := s.decodeCursor(c, scope, k); err != nil {
		return nil, err
	}
	return k, nil
}

func (s *Server) setCursor(dst **string, scope cursorScope, key any) error {
	c, err := s.encodeCursor(scope, key)
	if err != nil {
		return err
	}
	*dst = &c
	return nil
}

func searchParam(r *http.Request) (store.Query, error) {
	q, err := store.ParseQuery(r.URL.Query().Get("q"))
	switch {
	case errors.Is(err, store.ErrQueryNotUTF8):
		return store.Query{}, app.Invalidf("q", "q must be UTF-8 text.")
	case err != nil:
		return store.Query{}, app.Invalidf("q", "q has an unbalanced double quote.")
	}
	return q, nil
}
