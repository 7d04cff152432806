package app

import "context"

// DeleteInboxMessages deletes every message of an inbox of the caller's
// grant, each as DeleteMessage deletes one (SPEC §13: a test sink is
// cleared between test cases this way), and returns how many it deleted.
func (a *App) DeleteInboxMessages(ctx context.Context, c Caller, inboxID string) (int64, error) {
	if err := c.Need("messages:delete"); err != nil {
		return 0, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return 0, err
	}
	return a.db.DeleteInboxMessages(ctx, ib.ID)
}
