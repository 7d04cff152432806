package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/inboxd/inboxd/store"
)

// Error is an API error: the SPEC §5.1 envelope and its HTTP status.
type Error struct {
	Status  int
	Code    string
	Message string
	Param   string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func badRequest(param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: fmt.Sprintf(format, args...), Param: param}
}

var (
	errNotFound        = &Error{Status: http.StatusNotFound, Code: "not_found", Message: "Resource not found."}
	errUnauthenticated = &Error{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: "A valid API key is required: Authorization: Bearer <key>."}
	errInvalidCursor   = &Error{Status: http.StatusBadRequest, Code: "invalid_cursor", Message: "Cursor is invalid, expired, or belongs to another filter.", Param: "cursor"}
	errInternal        = &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "Internal error."}
	errTooLarge        = &Error{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large", Message: "Request body is too large."}
	errBodyTimeout     = &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "Request body did not arrive in time."}
	errRateLimited     = &Error{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: "Too many requests; retry after the time in Retry-After."}
	errMethod          = &Error{Status: http.StatusMethodNotAllowed, Code: "invalid_request", Message: "Method not allowed on this path."}
)

func errPermission(scope string) *Error {
	return &Error{Status: http.StatusForbidden, Code: "permission_denied", Message: "This API key lacks the scope " + scope + "."}
}

// writeError is the one place an outcome becomes an HTTP error: API errors
// are sent as they are, not-found from the store is the uniform 404, and
// anything else is ours: logged here, answered 500 with no detail.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	switch {
	case errors.As(err, &e):
	case errors.Is(err, store.ErrNotFound):
		e = errNotFound
	default:
		s.log.Error("api: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		e = errInternal
	}
	body := map[string]any{"code": e.Code, "message": e.Message}
	if e.Param != "" {
		body["param"] = e.Param
	}
	writeJSON(w, e.Status, map[string]any{"error": body})
}

// appendJSONLine appends a's JSON and the Encoder's newline.
func appendJSONLine(b []byte, a jsonAppender) []byte { return append(a.appendJSON(b), '\n') }

// writeBody answers a JSON body rendered already, in one write with its
// length (not chunked).
func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if _, err := w.Write(body); err != nil {
		slog.Debug("api: write response", "err", err)
	}
}

// writeJSON answers v as encoding/json's Encoder writes it, HTML characters
// unescaped; a jsonAppender writes the same bytes without reflection.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if a, ok := v.(jsonAppender); ok {
		writeBody(w, status, appendJSONLine(make([]byte, 0, 4<<10), a))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		slog.Debug("api: write response", "err", err)
	}
}

// recoverer turns a panic into 500 internal, with the detail only in the log.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.writeError(w, r, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
