package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/inboxd/inboxd/app"
)

// decodeJSON reads a JSON body strictly (decodeStrict), at most maxBody
// bytes of it.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		return decodeError(err, nil)
	}
	return decodeStrict(b, v)
}

// decoder is an operation's input: the request body, read by decodeJSON
// when the operation asks for it.
func (s *Server) decoder(w http.ResponseWriter, r *http.Request) app.Decoder {
	return func(v any) error { return s.decodeJSON(w, r, v) }
}

// optionalDecoder is decoder for an operation whose body may be left
// out: a body of nothing or whitespace (chunked or not) leaves the input
// as it is.
func (s *Server) optionalDecoder(w http.ResponseWriter, r *http.Request) app.Decoder {
	return func(v any) error {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
		if err != nil {
			return decodeError(err, nil)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return nil
		}
		return decodeStrict(b, v)
	}
}

// decodeStrict is the one way a request body becomes a value: unknown
// fields, wrong types and anything but whitespace after the JSON value
// are client errors that name the problem and where it is.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, func(field string, unknown bool) string { return errorPath(b, reflect.TypeOf(v), field, unknown) })
	}
	// Token, not More: More reports false for a stray } or ], which
	// would let `{…}}` through.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return app.Invalidf("", "Request body must hold a single JSON value, with nothing after it.")
	}
	return nil
}

// decodeError turns an error reading or decoding a JSON body into a 400
// that names the field (or a 413 for an oversized body). path, when
// there is a body to look into, finds the field's full path:
// encoding/json names a field without its list index or map key.
func decodeError(err error, path func(field string, unknown bool) string) error {
	if err == nil {
		return nil
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooLarge *http.MaxBytesError
	field := func(named string, unknown bool) string {
		if path != nil {
			if p := path(named, unknown); p != "" {
				return p
			}
		}
		return named
	}
	switch {
	case errors.As(err, &tooLarge):
		return errTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errBodyTimeout
	case errors.As(err, &syntax):
		return app.Invalidf("", "Malformed JSON at byte %d: %s.", syntax.Offset, syntax.Error())
	case errors.As(err, &typ) && typ.Type == reflect.TypeFor[app.AddressInput]():
		f := field(typ.Field, false)
		return app.Invalidf(f, `Field %q takes addresses as "a@b", "Name <a@b>" or {"email","name"}, not %s.`, f, typ.Value)
	case errors.As(err, &typ):
		f := field(typ.Field, false)
		return app.Invalidf(f, "Field %q must be %s, not %s.", f, jsonType(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF):
		return app.Invalidf("", "Request body must be a JSON object.")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return app.Invalidf("", "Malformed JSON: unexpected end of body.")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := field(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), true)
		return app.Invalidf(f, "Unknown field %q.", f)
	}
	return app.Invalidf("", "Malformed JSON: %s.", err.Error())
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice", "array":
		return "a list"
	case "struct", "map", "ptr":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "a number"
}

// pageParams reads a list's ?limit= and ?cursor=, for app to check.
func pageParams(r *http.Request) app.PageParams {
	q := r.URL.Query()
	return app.PageParams{Limit: q.Get("limit"), Cursor: q.Get("cursor")}
}

// bodyDeadline bounds the time a request body takes to arrive, so a body
// trickled a byte at a time cannot hold a connection and its handler for
// ever. (http.Server's ReadTimeout and WriteTimeout would bound the whole
// exchange, long-polls included.) The connection's read deadline is set
// when the request starts, and only when it has a body: net/http clears it
// itself once the body has been read to its end, when it starts reading
// the connection in the background to notice a client that goes away;
// without a body that background read is already running, and a deadline
// set now would end it with an error that cancels the request, cutting a
// long-poll short.
func bodyDeadline(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if timeout <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil && r.Body != http.NoBody {
				// A connection deadline is wall-clock time, not the API's clock.
				http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
			}
			next.ServeHTTP(w, r)
		})
	}
}
