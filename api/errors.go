package api

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/inboxd/inboxd/app"
)

// The errors of the HTTP exchange itself, not of an operation.
var (
	errTooLarge    = &app.Error{Code: app.EPayloadTooLarge, Message: "Request body is too large."}
	errBodyTimeout = &app.Error{Code: app.EInvalidRequest, Message: "Request body did not arrive in time."}
	errRateLimited = &app.Error{Code: app.ERateLimited, Message: "Too many requests; retry after the time in Retry-After."}
	errMethod      = &app.Error{Code: app.EInvalidRequest, Message: "Method not allowed on this path."}
)

// httpStatus is the HTTP status of an outcome: app's table (SPEC §5.1,
// shared with the console); anything that is not an *app.Error (nor the
// store's not-found) is ours: 500. (A method a path does not take is
// invalid_request, so 400 like every other: the table has no 405.)
func httpStatus(err error) int {
	return app.HTTPStatus(app.ErrorCode(err))
}

// writeError is the one place an outcome becomes an HTTP error: the
// envelope of SPEC §5.1 with httpStatus's status. An error that is ours
// is logged here and answered "Internal error." with no detail.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := app.ErrorCode(err)
	if code == app.EInternal {
		s.log.Error("api: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, httpStatus(err), errorJSON(err))
}

// errorJSON is the body of an error answer (SPEC §5.1).
func errorJSON(err error) map[string]any {
	body := map[string]any{"code": app.ErrorCode(err), "message": app.ErrorMessage(err)}
	if param := app.ErrorParam(err); param != "" {
		body["param"] = param
	}
	return map[string]any{"error": body}
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
