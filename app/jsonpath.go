package app

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// errorPath walks b, a JSON value that failed to decode into a value of
// type t, to the value the error is about — the first that decoding
// could not take (a key t has no place for, when unknown; else a value
// of the wrong type) at field, the error's path as encoding/json names
// it, without list indexes and map keys — and answers that value's full
// path as error params name it (to[0].name, headers.X-A,
// attachments[1]); "" when it finds none. Values that are wrong at
// another field are passed over: encoding/json reports the error of a
// type with its own UnmarshalJSON in place of one it met before.
//
// It follows encoding/json's rules: fields matched by their JSON names
// (or case-insensitively), embedded structs flattened, and a type with
// its own UnmarshalJSON (or a scalar) tried whole.
func errorPath(b []byte, t reflect.Type, field string, unknown bool) string {
	w := pathWalker{dec: json.NewDecoder(bytes.NewReader(b)), field: field, unknown: unknown}
	p, _ := w.walk(t, "", "")
	return p
}

type pathWalker struct {
	dec     *json.Decoder
	field   string // the error's path, as encoding/json names it
	unknown bool   // the error is of an unknown key, field
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// walk reads the next value, meant for a t at path (field, as
// encoding/json names it); found reports that the value (or one in it)
// is the one the error is about, or that the walk cannot go on.
func (w *pathWalker) walk(t reflect.Type, path, field string) (string, bool) {
	for t.Kind() == reflect.Pointer && !t.Implements(unmarshaler) {
		t = t.Elem()
	}
	wrong := func() (string, bool) { return path, !w.unknown && field == w.field }
	composite := t.Kind() == reflect.Struct || t.Kind() == reflect.Map ||
		(t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8
	if !composite || reflect.PointerTo(t).Implements(unmarshaler) {
		var raw json.RawMessage
		if err := w.dec.Decode(&raw); err != nil {
			return "", true
		}
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			return wrong()
		}
		return "", false
	}
	tok, err := w.dec.Token()
	switch {
	case err != nil:
		return "", true
	case tok == nil: // null
		return "", false
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		if tok != json.Delim('[') {
			return w.pass(tok, wrong)
		}
		for i := 0; w.dec.More(); i++ {
			if p, found := w.walk(t.Elem(), path+"["+strconv.Itoa(i)+"]", field); found {
				return p, true
			}
		}
	default: // a struct or a map
		if tok != json.Delim('{') {
			return w.pass(tok, wrong)
		}
		for w.dec.More() {
			tok, err := w.dec.Token()
			key, ok := tok.(string)
			if err != nil || !ok {
				return "", true
			}
			var elem reflect.Type
			name, fieldName := key, field
			if t.Kind() == reflect.Struct {
				f, via, ok := jsonField(t, key)
				if !ok {
					if w.unknown && key == w.field {
						return join(path, key), true
					}
					var skip json.RawMessage
					if err := w.dec.Decode(&skip); err != nil {
						return "", true
					}
					continue
				}
				elem, name = f.Type, jsonName(f)
				fieldName = join(field, via+name)
			} else {
				elem = t.Elem()
			}
			if p, found := w.walk(elem, join(path, name), fieldName); found {
				return p, true
			}
		}
	}
	if _, err := w.dec.Token(); err != nil { // the closing ] or }
		return "", true
	}
	return "", false
}

// pass is a value of the wrong kind, whose first token was tok: the
// one the error is about, or read to its end and passed over.
func (w *pathWalker) pass(tok json.Token, wrong func() (string, bool)) (string, bool) {
	if p, found := wrong(); found {
		return p, true
	}
	for depth := 0; ; {
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
		if depth == 0 {
			return "", false
		}
		var err error
		if tok, err = w.dec.Token(); err != nil {
			return "", true
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// jsonField is the field of struct t that the JSON key decodes into: the
// one named exactly, else the first whose name matches ignoring case;
// via is the path of embedded structs it is promoted through
// ("Embedded."), as encoding/json names it.
func jsonField(t reflect.Type, key string) (f reflect.StructField, via string, ok bool) {
	var fold *promoted
	for _, p := range jsonFields(t, "") {
		switch name := jsonName(p.f); {
		case name == key:
			return p.f, p.via, true
		case fold == nil && strings.EqualFold(name, key):
			fold = &p
		}
	}
	if fold != nil {
		return fold.f, fold.via, true
	}
	return reflect.StructField{}, "", false
}

type promoted struct {
	f   reflect.StructField
	via string
}

// jsonFields are the fields encoding/json decodes t's keys into, the
// fields of untagged embedded structs among them.
func jsonFields(t reflect.Type, via string) []promoted {
	var out []promoted
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		if name, _, _ := strings.Cut(tag, ","); f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				out = append(out, jsonFields(et, via+f.Name+".")...)
				continue
			}
		}
		if f.IsExported() {
			out = append(out, promoted{f, via})
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" {
		return name
	}
	return f.Name
}
