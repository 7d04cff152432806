package api

// The JSON objects of SPEC §5.4 live beside their routes (inboxJSON in
// inboxes.go, messageJSON in messages.go, …). Every listed field is always
// present: empty values are null, false or [], never omitted. This file
// holds what they share: the hand-written encoding of the hot list objects
// and the value helpers.

import (
	"io"
	"time"
	"unicode/utf8"

	"github.com/inboxd/inboxd/app"
)

// jsonAppender is implemented (on pointers, so list elements are encoded in
// place) by the objects of the hot list routes. Its output is byte for byte
// what writeJSON's encoding/json Encoder writes for the object, newline
// aside: reflection-based encoding was a tenth of the server's CPU on the
// thread-messages page. json_test.go holds the two to the same bytes.
type jsonAppender interface {
	appendJSON(b []byte) []byte
}

// appendString appends s quoted as encoding/json quotes it with HTML
// escaping off: " and \ escaped, control bytes as \b \f \n \r \t or \u00XX,
// invalid UTF-8 bytes as \ufffd, and U+2028 and U+2029 escaped for JSONP.
func appendString(b []byte, s string) []byte {
	b, _ = appendEscaped(append(b, '"'), s, false)
	return append(b, '"')
}

// appendEscaped appends s escaped as appendString escapes it, without the
// quotes. With more set (s is not the end of the string), it stops before
// an incomplete UTF-8 sequence at the end of s, whose bytes may yet become
// a rune, and says how many bytes it consumed.
func appendEscaped[S string | []byte](b []byte, s S, more bool) ([]byte, int) {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		// A rune is at most 4 bytes: converting them costs no allocation.
		rest := string(s[i:min(i+utf8.UTFMax, len(s))])
		if more && !utf8.FullRuneInString(rest) {
			return append(b, s[start:i]...), i
		}
		r, size := utf8.DecodeRuneInString(rest)
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...), len(s)
}

// jsonStringWriter writes what is written to it as the inside of a JSON
// string, escaped byte for byte as appendString escapes the whole: a UTF-8
// sequence split between two writes is held back until it is complete
// (or, at close, known not to be). It keeps its buffer small whatever the
// size of a write.
type jsonStringWriter struct {
	w     io.Writer
	buf   []byte
	held  [utf8.UTFMax]byte
	nheld int
}

// jsonChunk bounds the input escaped into buf at once; its output is at
// most six times as long.
const jsonChunk = 4 << 10

func (j *jsonStringWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), jsonChunk)
		if err := j.write(p[:k]); err != nil {
			return n - len(p), err
		}
		p = p[k:]
	}
	return n, nil
}

func (j *jsonStringWriter) WriteString(s string) (int, error) {
	n := len(s)
	var chunk [jsonChunk]byte
	for len(s) > 0 {
		k := copy(chunk[:], s)
		if err := j.write(chunk[:k]); err != nil {
			return n - len(s), err
		}
		s = s[k:]
	}
	return n, nil
}

func (j *jsonStringWriter) write(p []byte) error {
	j.buf = j.buf[:0]
	// First the held sequence, completed from p: one rune, or one invalid
	// byte of it, at a time, as appendString would decode them.
	for j.nheld > 0 && len(p) > 0 {
		h := j.nheld
		k := copy(j.held[h:], p)
		seq := j.held[:h+k]
		if !utf8.FullRune(seq) { // then all of p fits in held
			j.nheld = h + k
			return nil
		}
		_, size := utf8.DecodeRune(seq)
		j.buf, _ = appendEscaped(j.buf, seq[:size], false)
		if size >= h {
			p = p[size-h:]
			j.nheld = 0
		} else {
			j.nheld = copy(j.held[:], j.held[size:h])
		}
	}
	var used int
	j.buf, used = appendEscaped(j.buf, p, true)
	j.nheld = copy(j.held[:], p[used:])
	_, err := j.w.Write(j.buf)
	return err
}

// close writes what is held: the end of the string decides it.
func (j *jsonStringWriter) close() error {
	if j.nheld == 0 {
		return nil
	}
	j.buf, _ = appendEscaped(j.buf[:0], j.held[:j.nheld], false)
	j.nheld = 0
	_, err := j.w.Write(j.buf)
	return err
}

// writeJSONString writes a JSON string whose text fill writes (to a
// jsonStringWriter).
func writeJSONString(w io.Writer, fill func(io.Writer) error) error {
	if _, err := io.WriteString(w, `"`); err != nil {
		return err
	}
	j := &jsonStringWriter{w: w}
	if err := fill(j); err != nil {
		return err
	}
	if err := j.close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, `"`)
	return err
}

// appendStringOrNull appends *s, or null as encoding/json writes a nil
// pointer.
func appendStringOrNull(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendArray appends s, null if nil as encoding/json writes it. The
// elements are strings or jsonAppenders; anything else panics.
func appendArray[T any](b []byte, s []T) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range s {
		if i > 0 {
			b = append(b, ',')
		}
		if str, ok := any(&s[i]).(*string); ok {
			b = appendString(b, *str)
		} else {
			b = any(&s[i]).(jsonAppender).appendJSON(b)
		}
	}
	return append(b, ']')
}

func timeJSON(t time.Time) string { return app.FormatTime(t) }

func timePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timeJSON(*t)
	return &s
}

func strOrNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func emptyIfNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
