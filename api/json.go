package api

import "unicode/utf8"

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
	const hex = "0123456789abcdef"
	b = append(b, '"')
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
		r, size := utf8.DecodeRuneInString(s[i:])
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
	return append(append(b, s[start:]...), '"')
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
