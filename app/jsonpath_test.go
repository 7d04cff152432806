package app

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A decoding error names the value encoding/json failed on by its full
// path, where encoding/json names the field alone, and the path is that
// of the value the message is about.
func TestErrorPath(t *testing.T) {
	type Inner struct {
		N int `json:"n"`
	}
	type Embedded struct {
		E string `json:"e"`
	}
	type T struct {
		Embedded
		Addr     []AddressInput    `json:"addr"`
		List     []Inner           `json:"list"`
		Map      map[string]*Inner `json:"map"`
		Raw      json.RawMessage   `json:"raw"`
		Bytes    []byte            `json:"bytes"`
		Untagged string
	}
	for _, c := range []struct{ body, path string }{
		{`{"e":5}`, "e"},
		{`{"list":[{"n":1},{"n":"x"}]}`, "list[1].n"},
		{`{"list":[{"n":1},{"m":1}]}`, "list[1].m"},
		{`{"list":{"n":1}}`, "list"},
		{`{"raw":{"anything":[1]},"map":{"a":null,"b.c":{"N":1,"x":2}}}`, "map.b.c.x"},
		{`{"map":{"a":{"n":[]}}}`, "map.a.n"},
		{`{"bytes":5,"untagged":"ok"}`, "bytes"},
		{`{"untagged":5}`, "Untagged"},
		{`{"other":1}`, "other"},
		// encoding/json reports a later UnmarshalJSON's error in place of
		// one it met first; the path is the reported one's.
		{`{"e":5,"addr":["a@b",5]}`, "addr[1]"},
		{`{"list":[{"m":1}],"addr":[{"email":"a@b","x":1}]}`, "addr[0]"},
		{`{"list":{"n":[1,{"a":[]}]},"addr":[7]}`, "addr[0]"},
	} {
		var v T
		err := DecodeJSON([]byte(c.body), &v)
		if err == nil {
			t.Fatalf("%s decoded", c.body)
		}
		var e *Error
		if !errors.As(err, &e) || e.Param != c.path || !strings.Contains(e.Message, `"`+c.path+`"`) {
			t.Errorf("%s: %v, want param %q", c.body, err, c.path)
		}
	}
}

// The message says what was wanted in JSON's words, of the value as a
// whole too.
func TestDecodeJSONMessages(t *testing.T) {
	type T struct {
		Limit *int     `json:"limit"`
		Score float64  `json:"score"`
		Tags  []string `json:"tags"`
		Opts  *struct {
			On bool `json:"on"`
		} `json:"opts"`
	}
	for _, c := range []struct{ body, param, msg string }{
		{`[]`, "", "Request body must be a JSON object, not array."},
		{`"x"`, "", "Request body must be a JSON object, not string."},
		{`{"limit":"ten"}`, "limit", `Field "limit" must be an integer, not string.`},
		{`{"limit":2.5}`, "limit", `Field "limit" must be an integer, not number 2.5.`},
		{`{"score":"x"}`, "score", `Field "score" must be a number, not string.`},
		{`{"tags":[1]}`, "tags[0]", `Field "tags[0]" must be a string, not number.`},
		{`{"opts":[]}`, "opts", `Field "opts" must be an object, not array.`},
		{`{"opts":{"on":1}}`, "opts.on", `Field "opts.on" must be true or false, not number.`},
		{`{} {}`, "", "Request body must hold a single JSON value, with nothing after it."},
	} {
		var v T
		err := DecodeJSON([]byte(c.body), &v)
		if ErrorCode(err) != EInvalidRequest || ErrorParam(err) != c.param || ErrorMessage(err) != c.msg {
			t.Errorf("%s: %v (param %q), want %q: %q", c.body, err, ErrorParam(err), c.param, c.msg)
		}
	}
}
