package app

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"

	"github.com/inboxd/inboxd/store"
)

// eventScan is how many events one read of the log examines at most: a
// filter that matches nothing in a long log answers after this many with
// the position reached and has_more, instead of reading to the end.
const eventScan = 5000

// Event cursors are positions in the log, not bound to filters and valid
// as long as the log is retained (SPEC §8): "evc_" + base64 of the seq.
// They are not signed, so that every cursor handed out stays valid: one
// that decodes is still checked to be a position in the caller's
// project's log (IsEventPosition), which refuses a forged, foreign or
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

// EventsParams are the parameters of Events, as given.
type EventsParams struct {
	Limit   string   // "" for the default, 50
	After   string   // an event cursor; "" for the oldest retained event
	Types   []string // event types, each value one or a comma-separated list; none for all
	InboxID string   // "" for every inbox of the caller's grant
	Wait    string   // seconds to long-poll for a matching event (0–60); "" for none
}

// EventPage is one read of the event log.
type EventPage struct {
	Events []store.Event // the matching events, in log order
	// Next is the cursor of the position reached, never "": the last
	// event examined, matching or not (SPEC §8).
	Next    string
	HasMore bool
}

// Events reads the project's event log (SPEC §8), for a restricted caller
// only its inboxes' events: in log order after a cursor, optionally only
// some types or one inbox, long-polling up to Wait for the next match.
func (a *App) Events(ctx context.Context, c Caller, p EventsParams) (EventPage, error) {
	if err := c.Need("events:read"); err != nil {
		return EventPage{}, err
	}
	limit, err := PageParams{Limit: p.Limit}.Size(50)
	if err != nil {
		return EventPage{}, err
	}
	wait, err := waitOf(p.Wait)
	if err != nil {
		return EventPage{}, err
	}
	f := store.EventFilter{ProjectID: c.ProjectID, InboxIDs: c.InboxIDs, Scan: a.eventScan}
	if p.After != "" {
		seq, ok := parseEventCursor(p.After)
		if ok {
			if ok, err = a.db.IsEventPosition(ctx, c.ProjectID, seq); err != nil {
				return EventPage{}, err
			}
		}
		if !ok {
			return EventPage{}, &Error{Code: EInvalidCursor, Message: ErrInvalidCursor.Message, Param: "after"}
		}
		f.After = seq
	}
	for _, t := range p.Types {
		for _, t := range strings.Split(t, ",") {
			if !slices.Contains(store.EventTypes(), t) {
				return EventPage{}, Invalidf("type", "Unknown event type %q.", t)
			}
			f.Types = append(f.Types, t)
		}
	}
	if p.InboxID != "" {
		if _, err := a.GrantedInbox(ctx, c, p.InboxID); err != nil {
			return EventPage{}, err
		}
		f.InboxIDs = []string{p.InboxID}
	}
	var page store.EventPage
	err = a.poll(ctx, c, "events", wait, func() (bool, error) {
		var err error
		if page, err = a.db.EventLog(ctx, f, limit); err != nil {
			return false, err
		}
		// Waiting, the next read starts where this one stopped: what it
		// skipped is not examined again. A read that stopped at the scan
		// bound answers at once: the caller reads on from there.
		f.After = page.Next
		return len(page.Events) > 0 || page.More, nil
	})
	if err != nil {
		return EventPage{}, err
	}
	return EventPage{Events: page.Events, Next: eventCursor(page.Next), HasMore: page.More}, nil
}
