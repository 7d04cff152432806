package api

import (
	"net/http"
	"time"

	"github.com/inboxd/inboxd/app"
)

// writePage answers a list fetched with limit+1 rows (app.NewPage).
func writePage[R, T any](s *Server, w http.ResponseWriter, r *http.Request, rows []R, limit int, scope app.CursorScope,
	render func(R) T, position func(R) any) {
	page, err := app.NewPage(s.app, rows, limit, scope, position)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, render)
}

// writeList answers a page as SPEC §5.2's list object, each row rendered.
func writeList[R, T any](w http.ResponseWriter, page app.Page[R], render func(R) T) {
	out := listOf(page, render)
	if _, ok := any((*T)(nil)).(jsonAppender); ok {
		writeJSON(w, http.StatusOK, &out) // the list's appendJSON needs elements that append themselves
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// listOf is a page's list object.
func listOf[R, T any](page app.Page[R], render func(R) T) listJSON[T] {
	out := listJSON[T]{Data: make([]T, 0, len(page.Rows)), HasMore: page.HasMore}
	for _, row := range page.Rows {
		out.Data = append(out.Data, render(row))
	}
	if page.Next != "" {
		out.NextCursor = &page.Next
	}
	return out
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
func cursorAfter[K any](s *Server, r *http.Request, scope app.CursorScope) (*K, error) {
	return app.Position[K](s.app, scope, r.URL.Query().Get("cursor"))
}
