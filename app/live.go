package app

import (
	"context"
	"slices"
	"strings"

	"github.com/inboxd/inboxd/store"
)

// What a surface that follows the event log live needs (the console's
// Server-Sent Events, SPEC §12): where the log ends now, and the cursor
// of each event, so a client that reconnects resumes right after the last
// event it saw.

// EventsTail is the cursor of the end of the project's event log now:
// reading after it gives only events to come. It takes events:read.
func (a *App) EventsTail(ctx context.Context, c Caller) (string, error) {
	if err := c.Need("events:read"); err != nil {
		return "", err
	}
	seq, err := a.db.LastEventSeq(ctx, c.ProjectID)
	if err != nil {
		return "", err
	}
	return eventCursor(seq), nil
}

// EventCursor is the cursor of the position right after e: reading after
// it resumes with the event that follows.
func EventCursor(e Event) string { return eventCursor(e.Seq) }

// RecentEventsParams are the parameters of RecentEvents, as given.
type RecentEventsParams struct {
	Limit   string   // "" for the default, 50
	Before  string   // an event cursor; "" for the end of the log
	Types   []string // as for Events
	InboxID string   // as for Events
}

// RecentEvents reads the event log backwards, as a person looks at it:
// the latest matching events before a cursor (newest first), and the
// cursor to read older ones with ("" when there are none). It takes
// events:read and filters as Events does.
func (a *App) RecentEvents(ctx context.Context, c Caller, p RecentEventsParams) ([]Event, string, error) {
	if err := c.Need("events:read"); err != nil {
		return nil, "", err
	}
	limit, err := PageParams{Limit: p.Limit}.Size(50)
	if err != nil {
		return nil, "", err
	}
	var before int64
	if p.Before != "" {
		seq, ok := parseEventCursor(p.Before)
		if ok {
			if ok, err = a.db.IsEventPosition(ctx, c.ProjectID, seq); err != nil {
				return nil, "", err
			}
		}
		if !ok || seq == 0 {
			return nil, "", &Error{Code: EInvalidCursor, Message: ErrInvalidCursor.Message, Param: "before"}
		}
		before = seq
	}
	f := store.EventFilter{ProjectID: c.ProjectID, InboxIDs: c.InboxIDs}
	if f.Types, err = eventTypes(p.Types); err != nil {
		return nil, "", err
	}
	if p.InboxID != "" {
		if _, err := a.GrantedInbox(ctx, c, p.InboxID); err != nil {
			return nil, "", err
		}
		f.InboxIDs = []string{p.InboxID}
	}
	events, older, err := a.db.EventsBefore(ctx, f, before, limit)
	if err != nil || !older {
		return events, "", err
	}
	return events, eventCursor(events[len(events)-1].Seq), nil
}

// eventTypes checks a filter's event types, each value one type or a
// comma-separated list.
func eventTypes(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if !slices.Contains(store.EventTypes(), t) {
				return nil, Invalidf("type", "Unknown event type %q.", t)
			}
			out = append(out, t)
		}
	}
	return out, nil
}
