package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// errorPath walks b, a JSON value that failed to decode into a value of
// type t, to the first value that decoding could not take — a field t
// has no place for, or a value of the wrong type — and answers its path
// as error params name it (to[0].name, headers.X-A, attachments[1]); ""
// when it finds none. It follows encoding/json's rules: fields matched
// by their JSON names (or case-insensitively), embedded structs
// flattened, and a type with its own UnmarshalJSON (or a scalar) tried
// whole.
func errorPath(b []byte, t reflect.Type) string {
	w := pathWalker{dec: json.NewDecoder(bytes.NewReader(b))}
	p, _ := w.walk(t, "")
	return p
}

type pathWalker struct{ dec *json.Decoder }

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// walk reads the next value, meant for a t at path; found reports that
// the value (or one in it) is the one decoding failed on, or that the
// walk cannot go on.
func (w *pathWalker) walk(t reflect.Type, path string) (string, bool) {
	for t.Kind() == reflect.Pointer && !t.Implements(unmarshaler) {
		t = t.Elem()
	}
	composite := t.Kind() == reflect.Struct || t.Kind() == reflect.Map ||
		(t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8
	if !composite || reflect.PointerTo(t).Implements(unmarshaler) {
		var raw json.RawMessage
		if err := w.dec.Decode(&raw); err != nil {
			return "", true
		}
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			return path, true
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
			return path, true
		}
		for i := 0; w.dec.More(); i++ {
			if p, found := w.walk(t.Elem(), path+"["+strconv.Itoa(i)+"]"); found {
				return p, true
			}
		}
	default: // a struct or a map
		if tok != json.Delim('{') {
			return path, true
		}
		for w.dec.More() {
			tok, err := w.dec.Token()
			key, ok := tok.(string)
			if err != nil || !ok {
				return "", true
			}
			elem, name := reflect.Type(nil), key
			if t.Kind() == reflect.Struct {
				f, ok := jsonField(t, key)
				if !ok {
					return join(path, key), true
				}
				elem, name = f.Type, jsonName(f)
			} else {
				elem = t.Elem()
			}
			if p, found := w.walk(elem, join(path, name)); found {
				return p, true
			}
		}
	}
	if _, err := w.dec.Token(); err != nil { // the closing ] or }
		return "", true
	}
	return "", false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// jsonField is the field of struct t that the JSON key decodes into: the
// one named exactly, else the first whose name matches ignoring case.
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	var fold *reflect.StructField
	for _, f := range jsonFields(t) {
		switch name := jsonName(f); {
		case name == key:
			return f, true
		case fold == nil && strings.EqualFold(name, key):
			fold = &f
		}
	}
	if fold != nil {
		return *fold, true
	}
	return reflect.StructField{}, false
}

// jsonFields are the fields encoding/json decodes t's keys into, the
// fields of untagged embedded structs among them.
func jsonFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
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
				out = append(out, jsonFields(et)...)
				continue
			}
		}
		if f.IsExported() {
			out = append(out, f)
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
