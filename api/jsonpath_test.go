package api

import (
	"encoding/json"
	"reflect"
	"testing"
)

// errorPath names the value encoding/json failed on by its full path,
// where encoding/json names the field alone.
func TestErrorPath(t *testing.T) {
	type Inner struct {
		N int `json:"n"`
	}
	type Embedded struct {
		E string `json:"e"`
	}
	type T struct {
		Embedded
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
		{`{"bytes":"!!","untagged":"ok"}`, "bytes"},
		{`{"untagged":5}`, "Untagged"},
		{`{"other":1}`, "other"},
	} {
		var v T
		err := decodeStrict([]byte(c.body), &v)
		if err == nil {
			t.Fatalf("%s decoded", c.body)
		}
		if got := errorPath([]byte(c.body), reflect.TypeOf(&v)); got != c.path {
			t.Errorf("%s: %q, want %q (%v)", c.body, got, c.path, err)
		}
	}
}
