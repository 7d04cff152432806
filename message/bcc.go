package message

import "bytes"

// WithoutBcc removes the Bcc: and Resent-Bcc: fields from the header
// section of raw, their folded continuation lines too: every recipient's
// copy, and the stored one, would otherwise show the blind recipients
// (RFC 5322 §3.6.3). Everything else is kept byte for byte.
func WithoutBcc(raw []byte) []byte {
	var out []byte // nil until a field is dropped
	dropping := false
	pos := 0
	for pos < len(raw) {
		end := len(raw)
		if i := bytes.IndexByte(raw[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		line := raw[pos:end]
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			break // the blank line that ends the header section
		}
		// Which lines belong to a Bcc field is what the parser (readHeader)
		// makes of them, quirks included: a field is what a reader of the
		// copy may take as one.
		content := bytes.TrimRight(line, "\r\n")
		switch {
		case pos == 0 && (line[0] == ' ' || line[0] == '\t'):
			// QUIRK: whitespace before the first field; read as a field.
			dropping = isBccField(bytes.TrimLeft(content, " \t"))
		case line[0] == ' ' || line[0] == '\t':
			// A continuation of the field before.
		case validFieldLine(content):
			dropping = isBccField(content)
		default:
			// No field: a continuation that lost its whitespace (the
			// parser reads `Bcc: a,` then `b@x` as one field) or junk. It
			// goes with a Bcc before it: a blind address is never kept.
		}
		if dropping && out == nil {
			out = append(make([]byte, 0, len(raw)), raw[:pos]...)
		} else if !dropping && out != nil {
			out = append(out, line...)
		}
		pos = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[pos:]...)
}

// isBccField reports whether a header line starts a Bcc: or Resent-Bcc:
// field, in any case, with the obsolete space before the colon allowed
// (RFC 5322 §4.5.3).
func isBccField(line []byte) bool {
	name, _, ok := bytes.Cut(line, []byte(":"))
	name = bytes.TrimRight(name, " \t")
	return ok && (bytes.EqualFold(name, []byte("bcc")) || bytes.EqualFold(name, []byte("resent-bcc")))
}
