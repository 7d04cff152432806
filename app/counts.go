package app

import "context"

// InboxCounts are the figures the console shows beside an inbox (SPEC
// §12): each is nil when the caller lacks the scope that would let it read
// what is counted.
type InboxCounts struct {
	Threads          *int64 // threads:read
	Messages         *int64 // messages:read
	PendingApprovals *int64 // approvals:read
	Deferred         int64  // the inbox object's deferred_count
}

// InboxCounts counts an inbox of the caller's grant: its threads, their
// messages, its pending approvals and its held (deferred) mail. It takes
// inboxes:read, as the inbox object does.
func (a *App) InboxCounts(ctx context.Context, c Caller, inboxID string) (InboxCounts, error) {
	ib, err := a.Inbox(ctx, c, inboxID)
	if err != nil {
		return InboxCounts{}, err
	}
	out := InboxCounts{Deferred: ib.DeferredCount}
	if c.Has("threads:read") || c.Has("messages:read") {
		threads, messages, err := a.db.ThreadCounts(ctx, ib.ID)
		if err != nil {
			return InboxCounts{}, err
		}
		if c.Has("threads:read") {
			out.Threads = &threads
		}
		if c.Has("messages:read") {
			out.Messages = &messages
		}
	}
	if c.Has("approvals:read") {
		n, err := a.db.PendingApprovals(ctx, ib.ID)
		if err != nil {
			return InboxCounts{}, err
		}
		out.PendingApprovals = &n
	}
	return out, nil
}
