package app

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/inboxd/inboxd/store"
)

// DefaultWait is how long WaitForMessages waits when it is not told:
// under the idle limits of common proxies (60 s and up).
const DefaultWait = 45 * time.Second

// WaitParams are the parameters of WaitForMessages, as given.
type WaitParams struct {
	ThreadID  string // only the messages of this thread; "" for the whole inbox
	After     string // a cursor an earlier wait answered; "" to wait for what arrives from now on
	Direction string // inbound or outbound; "" for both
	Limit     string // the most messages one answer holds, 1–100; "" for 10
	Timeout   string // seconds to wait for the first one, 0–60; "" for DefaultWait
}

// Arrivals is what a wait answers: the messages that arrived after its
// cursor, in the order they were stored, with their extras and bodies.
// Messages.Next is the cursor to wait on from, never "": past every
// message answered and every event skipped; After[i] is the cursor just
// past Rows[i], for a surface that answers only the first i+1 of them (to
// stay under a size limit): the next wait then answers the rest.
type Arrivals struct {
	Messages
	After  []string
	Bodies map[string]store.BodyParts // by message id
}

// WaitForMessages answers the messages stored in an inbox (or one of its
// threads) after a cursor, waiting up to Timeout for the first of them.
// Its cursors are positions in the project's event log (SPEC §8), where a
// message is stored with its message.received (inbound) or message.queued
// (outbound) event in one transaction, and which orders commits: a
// message's created_at does not (a deferred message is stored minutes
// after its receive time). So a wait from the cursor the last one answered
// gets each message stored since exactly once, however it raced with
// commits, including those stored between the two calls. A cursor stays
// valid as long as the log keeps its position; without one, the wait
// starts at the end of the log.
func (a *App) WaitForMessages(ctx context.Context, c Caller, inboxID string, p WaitParams) (Arrivals, error) {
	if err := c.Need("messages:read"); err != nil {
		return Arrivals{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return Arrivals{}, err
	}
	if p.ThreadID != "" {
		if _, _, err := a.thread(ctx, c, ib.ID, p.ThreadID); err != nil {
			return Arrivals{}, err
		}
	}
	limit, err := PageParams{Limit: p.Limit}.Size(10)
	if err != nil {
		return Arrivals{}, err
	}
	timeout := DefaultWait
	if p.Timeout != "" {
		if timeout, err = waitOf(p.Timeout); err != nil {
			return Arrivals{}, Invalidf("timeout_seconds", "timeout_seconds must be an integer number of seconds from 0 to 60.")
		}
	}
	f := store.EventFilter{ProjectID: ib.ProjectID, InboxIDs: []string{ib.ID}, Scan: a.eventScan}
	switch p.Direction {
	case "":
		f.Types = []string{store.EventMessageReceived, store.EventMessageQueued}
	case "inbound":
		f.Types = []string{store.EventMessageReceived}
	case "outbound":
		f.Types = []string{store.EventMessageQueued}
	default:
		return Arrivals{}, Invalidf("direction", "direction must be inbound or outbound.")
	}
	if f.After, err = a.waitPosition(ctx, ib.ProjectID, p.After); err != nil {
		return Arrivals{}, err
	}

	var rows []store.Message
	var after []string
	var more bool
	err = a.poll(ctx, c, "wait_messages", timeout, func() (bool, error) {
		page, err := a.db.EventLog(ctx, f, limit)
		if err != nil {
			return false, err
		}
		for _, e := range page.Events {
			m, ok, err := a.arrived(ctx, ib.ID, p.ThreadID, e)
			if err != nil {
				return false, err
			}
			if ok {
				rows = append(rows, m)
				after = append(after, eventCursor(e.Seq))
			}
		}
		// The next read starts where this one stopped. One that stopped
		// at the limit or the scan bound answers at once: the caller
		// waits on from there.
		f.After, more = page.Next, page.More
		return len(rows) > 0 || more, nil
	})
	if err != nil {
		return Arrivals{}, err
	}
	atts, dels, err := a.extras(ctx, rows, true)
	if err != nil {
		return Arrivals{}, err
	}
	bodies, err := a.bodies(ctx, rows)
	if err != nil {
		return Arrivals{}, err
	}
	return Arrivals{
		Messages: Messages{Page: Page[store.Message]{Rows: rows, Next: eventCursor(f.After), HasMore: more},
			Inbox: ib, Attachments: atts, Deliveries: dels},
		After: after, Bodies: bodies,
	}, nil
}

// waitPosition is the log position a wait starts after: the cursor's, or
// the end of the log without one.
func (a *App) waitPosition(ctx context.Context, projectID, cursor string) (int64, error) {
	if cursor == "" {
		return a.db.LastEventSeq(ctx, projectID)
	}
	seq, ok := parseEventCursor(cursor)
	if ok {
		var err error
		if ok, err = a.db.IsEventPosition(ctx, projectID, seq); err != nil {
			return 0, err
		}
	}
	if !ok {
		return 0, &Error{Code: EInvalidCursor, Message: ErrInvalidCursor.Message, Param: "after"}
	}
	return seq, nil
}

// arrived is the message an event stored, when the wait answers it: of
// the thread waited on (if one is), and not deleted since.
func (a *App) arrived(ctx context.Context, inboxID, threadID string, e store.Event) (store.Message, bool, error) {
	var env struct {
		Data struct {
			MessageID string `json:"message_id"`
			ThreadID  string `json:"thread_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.Body, &env); err != nil {
		return store.Message{}, false, err
	}
	if threadID != "" && env.Data.ThreadID != threadID {
		return store.Message{}, false, nil
	}
	m, err := a.db.GetMessage(ctx, inboxID, env.Data.MessageID)
	if errors.Is(err, store.ErrNotFound) || err == nil && m.Deleted {
		return store.Message{}, false, nil
	}
	return m, err == nil, err
}
