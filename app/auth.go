package app

import (
	"context"
	"errors"

	"github.com/inboxd/inboxd/store"
)

// ErrUnauthenticated answers a request without a valid API key: none, an
// unknown one or a revoked one, alike (SPEC §5.1, §11).
var ErrUnauthenticated = &Error{Code: EUnauthenticated, Message: "A valid API key is required: Authorization: Bearer <key>."}

// Authenticate finds the caller an API key's token belongs to, through the
// store's key cache (the one SMTP sessions use too), so a revocation by
// any process applies to the very next request. version is the database's
// DataVersion the key was checked at: a surface may serve what it cached
// at that version. An empty token is ErrUnauthenticated like a wrong one.
func (a *App) Authenticate(ctx context.Context, token string) (c Caller, version int64, err error) {
	if token == "" {
		return Caller{}, 0, ErrUnauthenticated
	}
	k, version, err := a.db.Authenticate(ctx, store.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return Caller{}, 0, ErrUnauthenticated
	}
	if err != nil {
		return Caller{}, 0, err
	}
	return Caller{Key: k}, version, nil
}
