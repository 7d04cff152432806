package app

import (
	"errors"
	"fmt"
	"testing"

	"github.com/inboxd/inboxd/store"
)

// wantError asserts that err is an *Error with code and param.
func wantError(t *testing.T, err error, code, param string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code || e.Param != param {
		t.Fatalf("err = %v, want an *Error %s (param %q)", err, code, param)
	}
}

func TestErrorCodeMessageParam(t *testing.T) {
	for _, c := range []struct {
		name                 string
		err                  error
		code, message, param string
	}{
		{"nil", nil, "", "", ""},
		{"app error", Invalidf("limit", "limit %s.", "x"), EInvalidRequest, "limit x.", "limit"},
		{"wrapped app error", fmt.Errorf("list: %w", Errorf(EConflict, "Taken.")), EConflict, "Taken.", ""},
		{"store not found", fmt.Errorf("get inbox: %w", store.ErrNotFound), ENotFound, "Resource not found.", ""},
		{"ours", errors.New("disk I/O error"), EInternal, "Internal error.", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ErrorCode(c.err); got != c.code {
				t.Errorf("ErrorCode = %q, want %q", got, c.code)
			}
			if got := ErrorMessage(c.err); got != c.message {
				t.Errorf("ErrorMessage = %q, want %q", got, c.message)
			}
			if got := ErrorParam(c.err); got != c.param {
				t.Errorf("ErrorParam = %q, want %q", got, c.param)
			}
		})
	}
}

// Every code has its status of SPEC §5.1; an unknown one is ours.
func TestHTTPStatus(t *testing.T) {
	for code, want := range map[string]int{
		EInvalidRequest: 400, EInvalidCursor: 400, EUnauthenticated: 401, EPermissionDenied: 403, ENotFound: 404,
		EIdempotencyConflict: 409, EConflict: 409, EIdempotencyExpired: 422, EPayloadTooLarge: 413, ERateLimited: 429,
		ETemporarilyUnavailable: 503, EInternal: 500, "": 500, "nope": 500,
	} {
		if got := HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%q) = %d, want %d", code, got, want)
		}
	}
}
