package api

import (
	"encoding/json"
	"net/http"

	"github.com/inboxd/inboxd/app"
)

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, err := s.app.Events(r.Context(), callerFrom(r), app.EventsParams{
		Limit: q.Get("limit"), After: q.Get("after"), Types: q["type"], InboxID: q.Get("inbox_id"), Wait: q.Get("wait")})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Data       []map[string]any `json:"data"`
		NextCursor string           `json:"next_cursor"`
		HasMore    bool             `json:"has_more"`
	}{Data: []map[string]any{}, NextCursor: page.Next, HasMore: page.HasMore}
	for _, e := range page.Events {
		var v map[string]any
		if err := json.Unmarshal(e.Body, &v); err != nil {
			s.writeError(w, r, err)
			return
		}
		v["sequence"] = e.Seq
		v["occurred_at"] = timeJSON(e.OccurredAt)
		v["environment"] = e.Environment
		out.Data = append(out.Data, v)
	}
	writeJSON(w, http.StatusOK, out)
}
