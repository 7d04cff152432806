package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/inboxd/inboxd/app"
)

// decodeJSON reads a JSON body strictly (app.DecodeJSON), at most maxBody
// bytes of it.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		return readError(err)
	}
	return app.DecodeJSON(b, v)
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
			return readError(err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return nil
		}
		return app.DecodeJSON(b, v)
	}
}

// readError is an error reading a request body as the client's error: a
// 413 for an oversized body, a timeout for one that trickled.
func readError(err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooLarge):
		return errTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errBodyTimeout
	case errors.Is(err, io.ErrUnexpectedEOF):
		return app.Invalidf("", "Malformed JSON: unexpected end of body.")
	}
	return app.Invalidf("", "The request body could not be read: %s.", err.Error())
}

// pageParams reads a list's ?limit= and ?cursor=, for app to check.
func pageParams(r *http.Request) app.PageParams {
	q := r.URL.Query()
	return app.PageParams{Limit: q.Get("limit"), Cursor: q.Get("cursor")}
}

// singleValues refuses a query parameter given twice (SPEC §5.2 has one
// value for each), rather than letting a handler pick one of them: a
// client that sent ?q=a&q=b, or two limits, gets an error naming the
// parameter instead of an answer to half of its question. The event
// list's ?type= is the one that takes several values.
func (s *Server) singleValues(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var repeated string // the first by name, so the error is the same each time
		n := 0
		for name, values := range r.URL.Query() {
			if len(values) > 1 && name != "type" && (repeated == "" || name < repeated) {
				repeated, n = name, len(values)
			}
		}
		if repeated != "" {
			s.writeError(w, r, app.Invalidf(repeated, "Query parameter %q is given %d times; it takes one value.", repeated, n))
			return
		}
		next.ServeHTTP(w, r)
	})
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
