package app

import (
	"errors"
	"fmt"

	"github.com/inboxd/inboxd/store"
)

// The error codes of SPEC §5.1. Each surface maps them to its own answer
// (api: one table from code to HTTP status).
const (
	EInvalidRequest         = "invalid_request"
	EInvalidCursor          = "invalid_cursor"
	EUnauthenticated        = "unauthenticated"
	EPermissionDenied       = "permission_denied"
	ENotFound               = "not_found"
	EIdempotencyConflict    = "idempotency_conflict"
	EConflict               = "conflict"
	EIdempotencyExpired     = "idempotency_expired"
	EPayloadTooLarge        = "payload_too_large"
	ERateLimited            = "rate_limited"
	ETemporarilyUnavailable = "temporarily_unavailable"
	EInternal               = "internal"
)

// Error is an outcome the caller is told about: a code, a message for a
// person, and the parameter at fault, if one is. Any other error is ours
// (a disk, a bug): it reaches the caller only as "Internal error.", its
// detail only in the surface's log.
type Error struct {
	Code    string
	Message string
	Param   string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalidf returns an invalid_request Error naming the parameter at fault.
func Invalidf(param, format string, args ...any) *Error {
	return &Error{Code: EInvalidRequest, Message: fmt.Sprintf(format, args...), Param: param}
}

// The shared answers. SPEC §5.1: anything outside the caller's project or
// grant is ErrNotFound, word for word the answer for what does not exist.
var (
	ErrNotFound      = &Error{Code: ENotFound, Message: "Resource not found."}
	ErrInvalidCursor = &Error{Code: EInvalidCursor, Message: "Cursor is invalid, expired, or belongs to another filter.", Param: "cursor"}
)

// errInternal is what the caller learns of an error that is ours.
var errInternal = &Error{Code: EInternal, Message: "Internal error."}

// errorOf is the Error the caller is told for err: an *Error as it is,
// store.ErrNotFound as ErrNotFound, anything else errInternal.
func errorOf(err error) *Error {
	var e *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e
	case errors.Is(err, store.ErrNotFound):
		return ErrNotFound
	}
	return errInternal
}

// ErrorCode returns the code of err (see errorOf); "" for nil.
func ErrorCode(err error) string {
	if e := errorOf(err); e != nil {
		return e.Code
	}
	return ""
}

// ErrorMessage returns the message of err (see errorOf); "" for nil.
func ErrorMessage(err error) string {
	if e := errorOf(err); e != nil {
		return e.Message
	}
	return ""
}

// ErrorParam returns the parameter err names, if any.
func ErrorParam(err error) string {
	if e := errorOf(err); e != nil {
		return e.Param
	}
	return ""
}
