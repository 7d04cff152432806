package app

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/inboxd/inboxd/message"
)

// AddressInput is an address as a caller gives it: "a@b", "Name <a@b>"
// or {"email","name"}.
type AddressInput message.Address

func (a *AddressInput) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if name, email, ok := parseNamed(s); ok {
			*a = AddressInput{Email: email, Name: name}
			return nil
		}
		*a = AddressInput{Email: strings.TrimSpace(s)}
		return nil
	}
	var o struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		// A type error, so that encoding/json names the field it is in.
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[AddressInput]()}
	}
	*a = AddressInput{Email: o.Email, Name: o.Name}
	return nil
}

// jsonKind names the kind of a JSON value for an error message.
func jsonKind(b []byte) string {
	switch b = bytes.TrimSpace(b); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '{':
		return "an object with other fields"
	case b[0] == '[':
		return "a list"
	case b[0] == 't' || b[0] == 'f':
		return "true or false"
	case b[0] == 'n':
		return "null"
	}
	return "a number"
}

// parseNamed splits `Name <a@b>`.
func parseNamed(s string) (name, email string, ok bool) {
	s = strings.TrimSpace(s)
	i := strings.LastIndexByte(s, '<')
	if i < 0 || !strings.HasSuffix(s, ">") {
		return "", "", false
	}
	return strings.Trim(strings.TrimSpace(s[:i]), `"`), strings.TrimSpace(s[i+1 : len(s)-1]), true
}

// AddressesOf is a list of addresses as given, as addresses.
func AddressesOf(in []AddressInput) []message.Address {
	out := make([]message.Address, len(in))
	for i, a := range in {
		out[i] = message.Address(a)
	}
	return out
}

// AttachmentInput is a file as a caller gives it, its content in base64.
type AttachmentInput struct {
	Filename      string `json:"filename"`
	ContentType   string `json:"content_type"`
	ContentBase64 string `json:"content_base64"`
}

// Files are the attachments as files to compose, their content decoded
// and their type application/octet-stream when none was given; a type
// that is not one (type/subtype, optionally with parameters) is refused.
func Files(in []AttachmentInput) ([]message.File, error) {
	files := make([]message.File, len(in))
	for i, at := range in {
		if at.ContentType != "" && !message.ValidMediaType(at.ContentType) {
			return nil, Invalidf("attachments["+strconv.Itoa(i)+"].content_type", "%q is not a MIME type (type/subtype, optionally with parameters such as ; charset=utf-8).", at.ContentType)
		}
		data, err := at.Data(i)
		if err != nil {
			return nil, err
		}
		files[i] = message.File{Filename: at.Filename, ContentType: cmp.Or(at.ContentType, "application/octet-stream"), Data: data}
	}
	return files, nil
}

// Data is the attachment's content; i is its place in the list, which the
// error for bad base64 names.
func (a AttachmentInput) Data(i int) ([]byte, error) {
	data, err := base64.StdEncoding.DecodeString(a.ContentBase64)
	if err != nil {
		return nil, Invalidf("attachments["+strconv.Itoa(i)+"].content_base64", "content_base64 is not valid base64.")
	}
	return data, nil
}
