package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

// eventScan is how many events one read of the log examines at most: a
// filter that matches nothing in a long log answers after this many with
// the position reached and has_more, instead of reading to the end.
const eventScan = 5000

// Event cursors are positions in the log, not bound to filters and valid
// as long as the log is retained (SPEC §8): "evc_" + base64 of the seq.
// They are not signed, so that every cursor handed out stays valid: one
// that decodes is still checked to be a position in the key's project's
// log (IsEventPosition), which refuses a forged, foreign or
// beyond-the-end one.
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
	k := callerFrom(r)
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
	f := store.EventFilter{ProjectID: k.ProjectID, InboxIDs: k.InboxIDs, Scan: s.eventScan}
	if c := q.Get("after"); c != "" {
		seq, ok := parseEventCursor(c)
		if ok {
			if ok, err = s.db.IsEventPosition(r.Context(), k.ProjectID, seq); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if !ok {
			s.writeError(w, r, &app.Error{Code: app.EInvalidCursor, Message: app.ErrInvalidCursor.Message, Param: "after"})
			return
		}
		f.After = seq
	}
	for _, t := range q["type"] {
		for _, t := range strings.Split(t, ",") {
			if !slices.Contains(store.EventTypes(), t) {
				s.writeError(w, r, app.Invalidf("type", "Unknown event type %q.", t))
				return
			}
			f.Types = append(f.Types, t)
		}
	}
	if id := q.Get("inbox_id"); id != "" {
		if _, err := s.app.GrantedInbox(r.Context(), k, id); err != nil {
			s.writeError(w, r, err)
			return
		}
		f.InboxIDs = []string{id}
	}
	var page store.EventPage
	err = s.poll(r, wait, func() (bool, error) {
		var err error
		if page, err = s.db.EventLog(r.Context(), f, limit); err != nil {
			return false, err
		}
		// Waiting, the next read starts where this one stopped: what it
		// skipped is not examined again. A read that stopped at the scan
		// bound answers at once: the client reads on from there.
		f.After = page.Next
		return len(page.Events) > 0 || page.More, nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Data       []map[string]any `json:"data"`
		NextCursor string           `json:"next_cursor"`
		HasMore    bool             `json:"has_more"`
	}{Data: []map[string]any{}, NextCursor: eventCursor(page.Next), HasMore: page.More}
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
