package app

import "context"

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
