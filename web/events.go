package web

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/inboxd/inboxd/app"
)

// writeGrace bounds each write of an event stream: a browser that stops
// reading (a suspended laptop) frees its stream instead of holding it.
// The stream itself has no deadline (the server has no WriteTimeout).
const writeGrace = 30 * time.Second

// events streams the event log of the caller's grant as Server-Sent
// Events (SPEC §12), each with its log cursor as its id: a browser that
// reconnects sends the last one back (Last-Event-ID) and resumes right
// after it, so a dropped connection misses nothing. A new stream starts
// at ?after= or, without it, at the end of the log. Each wait is one
// long-poll of the log (app.Events); after each, before anything it
// brought is sent, the session is checked again, so a sign-out or a
// revoked key ends the stream ("event: ended") at the next event or
// heartbeat with nothing more sent, and the drain ends it at once.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		c.writeError(w, r, app.ErrSessionEnded)
		return
	}
	caller, _, err := c.app.Session(r.Context(), ck.Value)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.URL.Query().Get("after")
	}
	reset := false
	if after != "" {
		// A cursor that is no position of this log (a database replaced
		// meanwhile) restarts at the end, and says so. Any other error
		// (a key without events:read) is the answer: nothing unchecked
		// reaches the stream.
		_, err := c.app.Events(r.Context(), caller, app.EventsParams{After: after, Limit: "1"})
		switch {
		case app.ErrorCode(err) == app.EInvalidCursor:
			after, reset = "", true
		case err != nil:
			c.writeError(w, r, err)
			return
		}
	}
	if after == "" {
		if after, err = c.app.EventsTail(r.Context(), caller); err != nil {
			c.writeError(w, r, err)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not hold events back
	rc := http.NewResponseController(w)
	bw := bufio.NewWriter(w)
	send := func(s string) bool {
		rc.SetWriteDeadline(time.Now().Add(writeGrace))
		bw.WriteString(s)
		return bw.Flush() == nil && rc.Flush() == nil
	}
	// retry: how soon the browser reconnects after the stream ends. The
	// stream's starting position comes first, as the id of an event of
	// its own: a browser that loses the stream before any event came
	// resumes from there, not from wherever the log ends by then.
	first := "retry: 2000\n\n"
	if reset {
		first += "event: reset\ndata: {}\n\n"
	}
	first += "id: " + after + "\nevent: ready\ndata: {}\n\n"
	if !send(first) {
		return
	}
	wait := strconv.Itoa(max(1, int(c.heartbeat/time.Second)))
	for {
		select {
		case <-c.draining:
			return
		case <-r.Context().Done():
			return
		default:
		}
		page, err := c.app.Events(r.Context(), caller, app.EventsParams{After: after, Limit: "100", Wait: wait})
		if app.ErrorCode(err) == app.EUnauthenticated {
			// The key was revoked during the wait (app.poll checks).
			send("event: ended\ndata: {}\n\n")
			return
		}
		if err != nil {
			if r.Context().Err() == nil && app.ErrorCode(err) == app.EInternal {
				c.log.Error("web: event stream", "err", err)
			}
			send("event: error\ndata: " + strconv.Quote(app.ErrorMessage(err)) + "\n\n")
			return
		}
		// The wait may have outlasted the session: what it brought is
		// sent only if the session still stands.
		if caller, _, err = c.app.Session(r.Context(), ck.Value); err != nil {
			if r.Context().Err() == nil {
				send("event: ended\ndata: {}\n\n")
			}
			return
		}
		out := ""
		for _, e := range page.Events {
			// The envelope is one line of JSON (encoding/json writes no
			// newline), as one data: line must be.
			out += "id: " + app.EventCursor(e) + "\ndata: " + string(e.Body) + "\n\n"
		}
		if out == "" {
			out = ": heartbeat\n\n"
		}
		if !send(out) {
			return
		}
		after = page.Next
	}
}

// recentEvents answers the latest events of the log before ?before=
// (app.RecentEvents), newest first, for the console's event log view;
// the stream above brings the newer ones.
func (c *Console) recentEvents(w http.ResponseWriter, r *http.Request) {
	caller, err := c.caller(r)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	events, older, err := c.app.RecentEvents(r.Context(), caller, app.RecentEventsParams{Limit: q.Get("limit"), Before: q.Get("before"),
		Types: q["type"], InboxID: q.Get("inbox_id")})
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	type eventJSON struct {
		Cursor string          `json:"cursor"`
		Event  json.RawMessage `json:"event"`
	}
	out := struct {
		Data  []eventJSON `json:"data"`
		Older *string     `json:"older"`
	}{Data: []eventJSON{}}
	for _, e := range events {
		out.Data = append(out.Data, eventJSON{Cursor: app.EventCursor(e), Event: e.Body})
	}
	if older != "" {
		out.Older = &older
	}
	writeJSON(w, http.StatusOK, out)
}
