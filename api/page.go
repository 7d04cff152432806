package api

import (
	"net/http"
	"strconv"

	"github.com/inboxd/inboxd/app"
)

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

type listJSON[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

// appendJSON is for T whose pointer is a jsonAppender (writeList checks):
// other lists go through encoding/json.
func (l *listJSON[T]) appendJSON(b []byte) []byte {
	b = appendArray(append(b, `{"data":`...), l.Data)
	b = appendStringOrNull(append(b, `,"next_cursor":`...), l.NextCursor)
	b = strconv.AppendBool(append(b, `,"has_more":`...), l.HasMore)
	return append(b, '}')
}
