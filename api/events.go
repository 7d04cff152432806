package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/inboxd/inboxd/store"
)

// Event cursors are positions in the log, not bound to filters and valid
// as long as the log is retained (SPEC §8): "evc_" + base64 of the seq.
func eventCursor(seq int64) string {
	return "evc_" + base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(seq, 10)))
}

func parseEventCursor(c string) (int64, bool) {
	b64, ok := strings.CutPrefix(c, "evc_")
	if !ok {
		return 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil {
		return 0, false
	}
	seq, err := strconv.ParseInt(string(b), 10, 64)
	return seq, err == nil && seq >= 0
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	k := keyFrom(r)
	q := r.URL.Query()
	limit, err := listLimit(r, 50)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	wait, err := waitParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f := store.EventFilter{ProjectID: k.ProjectID, InboxIDs: k.InboxIDs}
	if c := q.Get("after"); c != "" {
		seq, ok := parseEventCursor(c)
		if !ok {
			s.writeError(w, r, &Error{Status: http.StatusBadRequest, Code: "invalid_cursor", Message: errInvalidCursor.Message, Param: "after"})
			return
		}
		f.After = seq
	}
	for _, t := range q["type"] {
		for _, t := range strings.Split(t, ",") {
			if !slices.Contains(store.EventTypes(), t) {
				s.writeError(w, r, badRequest("type", "Unknown event type %q.", t))
				return
			}
			f.Types = append(f.Types, t)
		}
	}
	if id := q.Get("inbox_id"); id != "" {
		if !canSee(k, id) {
			s.writeError(w, r, errNotFound)
			return
		}
		if _, err := s.db.GetInbox(r.Context(), k.ProjectID, id); err != nil {
			s.writeError(w, r, err)
			return
		}
		f.InboxIDs = []string{id}
	}
	var evs []store.Event
	err = s.poll(r, wait, func() (bool, error) {
		evs, err = s.db.Events(r.Context(), f, limit+1)
		return len(evs) > 0, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Data       []map[string]any `json:"data"`
		NextCursor string           `json:"next_cursor"`
		HasMore    bool             `json:"has_more"`
	}{Data: []map[string]any{}, NextCursor: eventCursor(f.After)}
	for i, e := range evs {
		if i == limit {
			out.HasMore = true
			break
		}
		var v map[string]any
		if err := json.Unmarshal(e.Body, &v); err != nil {
			s.writeError(w, r, err)
			return
		}
		v["sequence"] = e.Seq
		v["occurred_at"] = timeJSON(e.OccurredAt)
		v["environment"] = e.Environment
		out.Data = append(out.Data, v)
		out.NextCursor = eventCursor(e.Seq)
	}
	writeJSON(w, http.StatusOK, out)
}
