package store

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The address and id columns hold JSON that ingest writes itself (jsonList,
// jsonOrNull, jsonIDs). Decoding it through encoding/json's reflection was a
// fifth of a thread page's CPU, so these decoders read exactly that shape
// and hand anything else to encoding/json: a fast path, never a second
// definition of JSON.

// decodeAddress decodes {"email":…,"name":…} into a.
func decodeAddress(src string, a *Address) error {
	j := jsonScan{s: src, ok: true}
	if j.address(a); j.ok && j.s == "" {
		return nil
	}
	*a = Address{}
	return json.Unmarshal([]byte(src), a)
}

// decodeAddresses decodes a JSON list of addresses.
func decodeAddresses(src string, dst *[]Address) error {
	j := jsonScan{s: src, ok: true}
	var out []Address
	j.list(func() {
		var a Address
		j.address(&a)
		out = append(out, a)
	})
	if j.ok {
		*dst = out
		return nil
	}
	*dst = nil
	return json.Unmarshal([]byte(src), dst)
}

// decodeStrings decodes a JSON list of strings.
func decodeStrings(src string, dst *[]string) error {
	j := jsonScan{s: src, ok: true}
	var out []string
	j.list(func() { out = append(out, j.str()) })
	if j.ok {
		*dst = out
		return nil
	}
	*dst = nil
	return json.Unmarshal([]byte(src), dst)
}

// jsonScan consumes the compact JSON that encoding/json.Marshal writes; ok
// turns false at the first thing it does not expect.
type jsonScan struct {
	s  string
	ok bool
}

func (j *jsonScan) lit(prefix string) {
	if j.ok && strings.HasPrefix(j.s, prefix) {
		j.s = j.s[len(prefix):]
		return
	}
	j.ok = false
}

// list reads [elem, elem…], calling elem for each element.
func (j *jsonScan) list(elem func()) {
	j.lit("[")
	if j.ok && strings.HasPrefix(j.s, "]") {
		j.s = j.s[1:]
		j.ok = j.s == ""
		return
	}
	for j.ok {
		elem()
		if j.ok && strings.HasPrefix(j.s, ",") {
			j.s = j.s[1:]
			continue
		}
		j.lit("]")
		j.ok = j.ok && j.s == ""
		return
	}
}

func (j *jsonScan) address(a *Address) {
	j.lit(`{"email":`)
	a.Email = j.str()
	j.lit(`,"name":`)
	if j.ok && strings.HasPrefix(j.s, "null") {
		j.s = j.s[4:]
	} else {
		name := j.str()
		a.Name = &name
	}
	j.lit("}")
}

// str reads a string. Escapes other than \uXXXX outside the surrogates and
// the one-letter ones are left to encoding/json.
func (j *jsonScan) str() string {
	if !j.ok || !strings.HasPrefix(j.s, `"`) {
		j.ok = false
		return ""
	}
	s := j.s[1:]
	end := strings.IndexByte(s, '"')
	if end >= 0 && strings.IndexByte(s[:end], '\\') < 0 {
		v := s[:end]
		if !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 }) {
			j.ok = false
			return ""
		}
		j.s = s[end+1:]
		return v
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			if !utf8.ValidString(b.String()) {
				j.ok = false
				return ""
			}
			j.s = s[i+1:]
			return b.String()
		case c < 0x20:
			j.ok = false
			return ""
		case c != '\\':
			b.WriteByte(c)
			i++
		case i+1 < len(s) && strings.IndexByte(`"\/bfnrt`, s[i+1]) >= 0:
			b.WriteByte(unescape(s[i+1]))
			i += 2
		case i+5 < len(s) && s[i+1] == 'u':
			r, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
			if err != nil || (r >= 0xd800 && r < 0xe000) {
				j.ok = false // surrogate pairs: encoding/json's job
				return ""
			}
			b.WriteRune(rune(r))
			i += 6
		default:
			j.ok = false
			return ""
		}
	}
	j.ok = false
	return ""
}

func unescape(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // " \ /
}
