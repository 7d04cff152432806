package api

import (
	"net/http"

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

// cursorAfter decodes the ?cursor= of a list into its keyset position (nil when
// absent).
func cursorAfter[K any](s *Server, r *http.Request, scope app.CursorScope) (*K, error) {
	return app.Position[K](s.app, scope, r.URL.Query().Get("cursor"))
}
