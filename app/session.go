package app

import (
	"context"
	"errors"
	"time"

	"github.com/inboxd/inboxd/store"
)

// Console sessions (SPEC §12): a person signs in to the web console with
// an API key, which is exchanged for a session id the browser keeps in a
// cookie; the key itself is never kept. The session stands for the key:
// the same scopes and inbox grant, checked by the same operations. It is
// kept in the database, hashed as key tokens are, so that it outlives a
// restart and ends the moment its key is revoked by any process (every
// lookup joins the key).

// SessionTTL is how long a session lasts from sign-in.
const SessionTTL = 7 * 24 * time.Hour

// ErrSessionEnded answers a session that is unknown, expired, ended by
// sign-out, or whose key was revoked, alike.
var ErrSessionEnded = &Error{Code: EUnauthenticated, Message: "The console session has ended (signed out, expired, or its API key was revoked); sign in again."}

// StartSession exchanges an API key's token for a new session: its id
// (to hand to the browser, the only time it is shown) and the caller it
// stands for. A token that does not authenticate is ErrUnauthenticated.
func (a *App) StartSession(ctx context.Context, token string) (string, Caller, error) {
	c, _, err := a.Authenticate(ctx, token)
	if err != nil {
		return "", Caller{}, err
	}
	id, err := a.db.CreateSession(ctx, c.ID, a.now().Add(SessionTTL))
	if errors.Is(err, store.ErrNotFound) { // revoked in between
		return "", Caller{}, ErrUnauthenticated
	}
	if err != nil {
		return "", Caller{}, err
	}
	return id, c, nil
}

// Session finds the caller a session id stands for, and the database
// version it was checked at (as Authenticate gives it).
func (a *App) Session(ctx context.Context, id string) (Caller, int64, error) {
	if id == "" {
		return Caller{}, 0, ErrSessionEnded
	}
	k, version, err := a.db.SessionKey(ctx, store.HashToken(id), a.now())
	if errors.Is(err, store.ErrNotFound) {
		return Caller{}, 0, ErrSessionEnded
	}
	if err != nil {
		return Caller{}, 0, err
	}
	return Caller{Key: k}, version, nil
}

// EndSession ends a session (sign-out). Ending one that has ended already
// is no error: signing out twice is signed out.
func (a *App) EndSession(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	return a.db.DeleteSession(ctx, store.HashToken(id))
}
