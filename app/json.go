package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
)

// DecodeJSON is the one way a caller's JSON (a REST request body, an MCP
// tool's arguments) becomes a value, strictly: unknown fields, wrong
// types and anything but whitespace after the JSON value are
// invalid_request errors that name the problem and the value's full path
// (to[0], attachments[1].filename, headers.X-A).
func DecodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, func(field string, unknown bool) string {
			if p := errorPath(b, reflect.TypeOf(v), field, unknown); p != "" {
				return p
			}
			return field
		})
	}
	// Token, not More: More reports false for a stray } or ], which
	// would let `{…}}` through.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Invalidf("", "Request body must hold a single JSON value, with nothing after it.")
	}
	return nil
}

// jsonError is a decoding error as a client error; path gives the full
// path of the field encoding/json names (without list indexes or map
// keys).
func jsonError(err error, path func(field string, unknown bool) string) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return Invalidf("", "Malformed JSON at byte %d: %s.", syntax.Offset, syntax.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return Invalidf("", "Request body must be a JSON object, not %s.", typ.Value)
		}
		f := path(typ.Field, false)
		if typ.Type == reflect.TypeFor[AddressInput]() {
			return Invalidf(f, `Field %q takes addresses as "a@b", "Name <a@b>" or {"email","name"}, not %s.`, f, typ.Value)
		}
		return Invalidf(f, "Field %q must be %s, not %s.", f, jsonType(typ.Type), typ.Value)
	case errors.Is(err, io.EOF):
		return Invalidf("", "Request body must be a JSON object.")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Invalidf("", "Malformed JSON: unexpected end of body.")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := path(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), true)
		return Invalidf(f, "Unknown field %q.", f)
	}
	return Invalidf("", "Malformed JSON: %s.", err.Error())
}

// jsonType names the JSON a Go type decodes from.
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	}
	return "a number"
}
