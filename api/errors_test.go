package api

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

// httpStatus is SPEC §5.1's table, every code of it.
func TestHTTPStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{app.Invalidf("limit", "x"), http.StatusBadRequest},
		{app.ErrInvalidCursor, http.StatusBadRequest},
		{app.ErrUnauthenticated, http.StatusUnauthorized},
		{app.Errorf(app.EPermissionDenied, "x"), http.StatusForbidden},
		{app.ErrNotFound, http.StatusNotFound},
		{fmt.Errorf("get: %w", store.ErrNotFound), http.StatusNotFound},
		{app.Errorf(app.EIdempotencyConflict, "x"), http.StatusConflict},
		{app.Errorf(app.EConflict, "x"), http.StatusConflict},
		{app.Errorf(app.EIdempotencyExpired, "x"), http.StatusUnprocessableEntity},
		{errTooLarge, http.StatusRequestEntityTooLarge},
		{errRateLimited, http.StatusTooManyRequests},
		{app.Errorf(app.ETemporarilyUnavailable, "x"), http.StatusServiceUnavailable},
		{errors.New("disk full"), http.StatusInternalServerError},
		{errMethod, http.StatusBadRequest},
		{errBodyTimeout, http.StatusBadRequest},
	} {
		if got := httpStatus(c.err); got != c.want {
			t.Errorf("httpStatus(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
