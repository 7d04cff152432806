package app

import (
	"context"
	"errors"
	"time"

	"github.com/inboxd/inboxd/store"
)

// maxWait is the longest a long-poll waits (SPEC §5.3, §8).
const maxWait = 60 * time.Second

// poll runs query for c until it finds something or wait runs out (wait
// 0: once); op names the operation in the log. What a wait woken by a
// commit finds is answered only while c's key still stands: a key revoked
// meanwhile gets ErrUnauthenticated, not the mail that came after. The change signal is taken before each query, so a commit between
// the query and the wait is never missed; waiters are woken by commits,
// never by polling the database. The drain, and the end of the caller's
// context (its own deadline, or a client gone), end the wait at once with
// the answer an expired wait gives: what there is, no error.
func (a *App) poll(ctx context.Context, c Caller, op string, wait time.Duration, query func() (found bool, err error)) error {
	var deadline <-chan time.Time
	if wait > 0 {
		a.log.Debug("app: long-poll", "op", op, "wait", wait)
		timer := time.NewTimer(wait)
		defer timer.Stop()
		deadline = timer.C
	}
	for woken := false; ; woken = true {
		changed := a.db.Changed()
		found, err := query()
		if err != nil && ctx.Err() != nil {
			// The context ended while a commit had woken the wait: the
			// query failed for that alone, and the wait ends as below.
			return nil
		}
		if err == nil && found && woken {
			err = a.stillValid(ctx, c)
		}
		if err != nil || found || deadline == nil {
			return err
		}
		if a.pollWaiting != nil {
			a.pollWaiting()
		}
		select {
		case <-changed:
		case <-deadline:
			return nil
		case <-a.draining:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// stillValid reports ErrUnauthenticated once c's key has been revoked.
func (a *App) stillValid(ctx context.Context, c Caller) error {
	_, err := a.db.GetKey(ctx, c.ProjectID, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return ErrUnauthenticated
	}
	return err
}
