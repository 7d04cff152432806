package message

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"

	gomail "github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"
)

// maxHeaderBytes bounds the top-level header block, as go-message does.
const maxHeaderBytes = 1 << 20

var errHeaderTooBig = errors.New("header block exceeds 1 MiB; the rest was read as body")

// errJunkHeaderLine is a header line that is no field, between fields.
var errJunkHeaderLine = errors.New("a line inside the header is no field; it was skipped")

// readHeader reads a header block (the message's or a part's) leniently and
// hands a cleaned copy to go-message's textproto reader. Lines that cannot be
// part of a header are repaired where the intent is clear; otherwise the
// header is taken to end there and the line is returned in rest as the start
// of the body, so nothing is dropped. stop, when non-nil, recognizes a line
// that ends the header early (a multipart delimiter); it is returned in rest
// too.
func readHeader(src *lineReader, stop func([]byte) bool) (h textproto.Header, rest []byte, err error) {
	var clean bytes.Buffer
	haveField := false
	prevEnd := byte(0)
	first := true
	var pending []byte // a line read ahead, and its error
	var pendingErr error
	for {
		line, lerr := pending, pendingErr
		if pending == nil {
			line, lerr = fullLine(src)
		}
		pending, pendingErr = nil, nil
		if len(line) == 0 && lerr != nil {
			break // end of input: a message with only a header
		}
		content := bytes.TrimRight(line, "\r\n")
		if len(content) == 0 {
			break // RFC 5322 §2.1: the blank line ends the header
		}
		if stop != nil && stop(line) {
			rest = line
			break
		}
		if clean.Len()+len(line) > maxHeaderBytes {
			rest = line
			err = errHeaderTooBig
			break
		}
		isFirst := first
		first = false
		switch {
		case isFirst && bytes.HasPrefix(content, []byte("From ")) && !validFieldLine(content):
			// QUIRK: an mbox "From " separator line left in front of the
			// message by the tool that exported it.
			continue
		case content[0] == ' ' || content[0] == '\t':
			if !haveField {
				// QUIRK: leading whitespace before the first field (RFC 5322
				// §2.2.3 forbids folding there); read it as a field.
				content = bytes.TrimLeft(content, " \t")
				if !validFieldLine(content) {
					rest = line
					goto done
				}
				haveField = true
			}
		case validFieldLine(content):
			haveField = true
		case haveField && (prevEnd == ';' || prevEnd == ',' || looksLikeParam(content)):
			// QUIRK: a continuation line that lost its leading whitespace,
			// e.g. `name="x.zip"` on its own line after `Content-Type: …;`.
			clean.WriteByte(' ')
		case stop == nil && lerr == nil:
			// A line that is no field. QUIRK: junk inside the message's
			// header, fields after it (a broken gateway's stray line): the
			// header goes on past it, so Message-ID and the threading
			// headers below are kept, and parse_error says a line was
			// dropped. Else (QUIRK) no blank line between header and
			// body: the body starts here.
			next, nerr := fullLine(src)
			if c := bytes.TrimRight(next, "\r\n"); validFieldLine(c) && knownField(c) {
				if err == nil {
					err = errJunkHeaderLine
				}
				pending, pendingErr = next, nerr
				continue
			}
			rest = append(line, next...)
			goto done
		default:
			// QUIRK: no blank line between header and body; the body starts
			// here.
			rest = line
			goto done
		}
		clean.Write(content)
		clean.WriteString("\r\n")
		if c := bytes.TrimRight(content, " \t"); len(c) > 0 {
			prevEnd = c[len(c)-1]
		}
		if lerr != nil {
			break
		}
	}
done:
	clean.WriteString("\r\n")
	// Size the reader to the header: most part headers are a few bytes, and
	// a default 4 KiB buffer per part dominated the cost of messages with
	// many tiny parts.
	th, terr := textproto.ReadHeader(bufio.NewReaderSize(&clean, min(clean.Len(), 4096)))
	if terr != nil && err == nil {
		err = terr
	}
	return th, rest, err
}

// fullLine returns one whole line, including its terminator, however long
// (up to just past maxHeaderBytes).
func fullLine(src *lineReader) ([]byte, error) {
	line, err := src.readLine(true)
	for err == nil && len(line) > 0 && line[len(line)-1] != '\n' && len(line) <= maxHeaderBytes {
		var more []byte
		more, err = src.readLine(false)
		if len(more) == 0 && err == nil {
			break
		}
		line = append(line, more...)
	}
	return line, err
}

// knownFields are header fields of mail that a body line is unlikely to
// start with ("Note: …" may, "Message-ID: …" hardly): after a line that is
// no field, one of these says the header goes on.
var knownFields = []string{"message-id", "in-reply-to", "references", "date", "from", "to", "cc", "bcc",
	"subject", "reply-to", "sender", "mime-version", "content-type", "content-transfer-encoding",
	"content-disposition", "received", "return-path", "dkim-signature", "authentication-results"}

// knownField reports whether a field line's name is one of knownFields
// or an X- field.
func knownField(line []byte) bool {
	name, _, _ := bytes.Cut(line, []byte(":"))
	name = bytes.ToLower(bytes.TrimRight(name, " \t"))
	return bytes.HasPrefix(name, []byte("x-")) || slices.Contains(knownFields, string(name))
}

// validFieldLine reports whether line starts with an RFC 5322 §2.2 field
// name followed by a colon (whitespace before the colon is tolerated, as
// go-message does).
func validFieldLine(line []byte) bool {
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return false
	}
	key := bytes.TrimRight(line[:i], " \t")
	if len(key) == 0 {
		return false
	}
	for _, c := range key {
		if c < 33 || c > 126 {
			return false
		}
	}
	return true
}

var paramLine = regexp.MustCompile(`^[A-Za-z0-9_\-]+\*?[0-9]*\*?\s*=`)

func looksLikeParam(line []byte) bool { return paramLine.Match(line) }

// headers fills the envelope-ish fields of p from the top-level header.
func (ps *parser) headers(h textproto.Header) {
	p := ps.out
	p.Subject = decodeText(h.Get("Subject"))
	if from := addressValues(h, "From"); len(from) > 0 {
		p.From = &from[0]
	}
	p.To = addressValues(h, "To")
	p.Cc = addressValues(h, "Cc")
	p.ReplyTo = addressValues(h, "Reply-To")
	p.Date = parseDate(h.Get("Date"))
	p.MessageID = idValues(h, "Message-Id")
	p.InReplyTo = idValues(h, "In-Reply-To")
	p.References = idValues(h, "References")
}

// idValues returns the raw values of a msg-id header. They are not RFC 2047
// decoded: RFC 2047 §5 does not allow encoded-words in msg-id, and the
// threading code wants the ids exactly as sent.
func idValues(h textproto.Header, key string) []string {
	vs := h.Values(key)
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, strings.TrimSpace(fixUTF8(v)))
	}
	return out
}

// DecodeText decodes an unstructured header value (Subject, X-*): RFC
// 6532 raw UTF-8 and RFC 2047 encoded-words.
func DecodeText(v string) string { return decodeText(v) }

// decodeText decodes an unstructured header value: RFC 6532 raw UTF-8 and
// RFC 2047 encoded-words.
func decodeText(v string) string {
	v = fixUTF8(v)
	if !strings.Contains(v, "=?") {
		return strings.TrimSpace(v)
	}
	dec := mime.WordDecoder{CharsetReader: wordCharsetReader}
	s, err := dec.DecodeHeader(v)
	if err != nil {
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(fixUTF8(s))
}

// wordCharsetReader converts an encoded-word's charset to UTF-8, falling back
// to a lossless guess for charsets nobody registered.
func wordCharsetReader(charset string, r io.Reader) (io.Reader, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return strings.NewReader(toUTF8(b, charset, false)), nil
}

// addressValues parses every value of an address header. Several fields of
// the same name are concatenated, because mailers do emit them (RFC 5322
// §3.6 allows one, real mail has more) and dropping any would lose a
// recipient.
func addressValues(h textproto.Header, key string) []Address {
	out := []Address{}
	for _, v := range h.Values(key) {
		out = append(out, parseAddressList(v)...)
	}
	return out
}

// parseAddressList parses an address header value. It uses RFC 5322 parsing
// (go-message, net/mail) and, for values that do not parse strictly, falls
// back per comma-separated item to a best-effort local@domain search, keeping
// the remainder as the display name. It drops only what holds neither an
// address nor a name (a stray ">", "<>").
func parseAddressList(v string) []Address {
	v = strings.TrimSpace(fixUTF8(v))
	out := []Address{}
	if v == "" {
		return out
	}
	if list, err := gomail.ParseAddressList(v); err == nil {
		for _, a := range list {
			out = append(out, Address{Email: a.Address, Name: decodeName(a.Name)})
		}
		return out
	}
	items := splitAddressList(v)
	for i := 0; i < len(items); i++ {
		item := strings.TrimSpace(items[i])
		if item == "" {
			continue
		}
		if a, err := gomail.ParseAddress(item); err == nil {
			out = append(out, Address{Email: a.Address, Name: decodeName(a.Name)})
			continue
		}
		// QUIRK: "Doe, John <j@x>": an unquoted comma in a display name
		// parts it from its address; a piece without an address joins the
		// pieces after it up to the next one with an address, and that one
		// too unless it is the address alone: "John Smith, jane@x" is a
		// name and jane, not jane named "John Smith,", but "Smith, John
		// john@x" is John.
		if !strings.Contains(item, "@") {
			j := i + 1
			for j < len(items) && !strings.Contains(items[j], "@") {
				j++
			}
			if j < len(items) && !bareAddress(items[j]) {
				j++
			}
			item = strings.Join(items[i:j], ",")
			i = j - 1
		}
		// QUIRK: several "Name <addr>" without commas between them, or
		// separated by semicolons (Outlook's habit).
		for _, group := range splitList(item, ';') {
			for _, seg := range splitAngleGroups(group) {
				for _, a := range looseAddresses(seg) {
					if a != (Address{}) { // a stray ">" or "<>" is no one
						out = append(out, a)
					}
				}
			}
		}
	}
	return out
}

// bareAddress reports whether a piece of an address list is an address
// and nothing else.
func bareAddress(piece string) bool {
	piece = strings.TrimSpace(piece)
	loc := emailish.FindStringIndex(piece)
	return loc != nil && loc[0] == 0 && loc[1] == len(piece)
}

// looseAddresses is fallbackAddress, except that a piece without angle
// brackets holding several addresses (QUIRK: "a@x b@y", separated by
// spaces) is one address each: no recipient is folded into a name.
func looseAddresses(seg string) []Address {
	if strings.TrimSpace(seg) == "" {
		return nil
	}
	if a, err := gomail.ParseAddress(strings.TrimSpace(seg)); err == nil {
		return []Address{{Email: a.Address, Name: decodeName(a.Name)}}
	}
	if !strings.ContainsAny(seg, "<\"") {
		if found := emailish.FindAllString(seg, -1); len(found) > 1 {
			out := make([]Address, len(found))
			for i, email := range found {
				out[i] = Address{Email: strings.Trim(email, ".")}
			}
			return out
		}
	}
	return []Address{fallbackAddress(seg)}
}

// decodeName decodes encoded-words that net/mail leaves alone.
// QUIRK: mailers put RFC 2047 encoded-words inside quoted strings, which RFC
// 2047 §5 forbids and net/mail therefore does not decode.
func decodeName(name string) string {
	name = strings.TrimSpace(name)
	if strings.Contains(name, "=?") {
		return decodeText(name)
	}
	return name
}

// splitAngleGroups splits "A <a@x> B <b@y>" after each '>' that closes an
// address, when there is more than one.
func splitAngleGroups(item string) []string {
	if strings.Count(item, ">") < 2 {
		return []string{item}
	}
	var out []string
	for {
		i := strings.IndexByte(item, '>')
		if i < 0 {
			break
		}
		out = append(out, item[:i+1])
		item = item[i+1:]
	}
	if strings.TrimSpace(item) != "" {
		out = append(out, item)
	}
	return out
}

var obsRoute = regexp.MustCompile(`<\s*@[^<>:",@\s]*(?:\s*,\s*@[^<>:",@\s]*)*\s*:`)

var emailish = regexp.MustCompile(`[^\s<>()\[\]"',;:]+@[^\s<>()\[\]"',;:]+`)

// fallbackAddress is the best effort for an address that RFC 5322 parsing
// rejected.
func fallbackAddress(item string) Address {
	// QUIRK: senders emit unquoted specials in display names ("Doe, John
	// <j@x>" split badly, "Dr. J. <j@x>"), bare addresses with trailing junk,
	// or encoded-words inside quoted strings.
	// QUIRK: an obsolete source route (RFC 5322 §4.4, "<@a,@b:k@x>"),
	// which net/mail rejects, is dropped: it is neither address nor name.
	item = obsRoute.ReplaceAllString(item, "<")
	// The address is the one in angle brackets, when one is: in
	// "support@bank.example <x@evil.example>" the first is display text,
	// and a reply to it would go to someone else (RFC 5322 §3.4).
	all := emailish.FindAllStringIndex(item, -1)
	if len(all) == 0 {
		return Address{Name: cleanName(item)}
	}
	loc := all[0]
	for _, l := range all {
		if strings.HasSuffix(strings.TrimRight(item[:l[0]], " \t"), "<") && strings.HasPrefix(strings.TrimLeft(item[l[1]:], " \t"), ">") {
			loc = l
		}
	}
	email := strings.Trim(item[loc[0]:loc[1]], ".")
	name := item[:loc[0]] + " " + item[loc[1]:]
	return Address{Email: email, Name: cleanName(name)}
}

func cleanName(s string) string {
	s = strings.NewReplacer("<", " ", ">", " ", "(", " ", ")", " ", "\\\"", "\"").Replace(s)
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Trim(s, "\"' ")
	return decodeText(s)
}

// splitAddressList splits at commas outside quoted strings, comments and
// angle brackets.
func splitAddressList(v string) []string { return splitList(v, ',') }

// splitList splits at sep outside quoted strings, comments and angle
// brackets.
func splitList(v string, sep byte) []string {
	var out []string
	var quoted, escaped bool
	depth, angle := 0, 0
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case c == '<':
			angle++
		case c == '>' && angle > 0:
			angle--
		case c == sep && depth == 0 && angle == 0:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

var dateLayouts = []string{
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 2006 15:04 -0700",
	"2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 06 15:04:05 -0700",
	"Mon, 2 Jan 06 15:04:05 MST",
	"Mon, 2 January 2006 15:04:05 -0700",
	"Mon Jan 2 15:04:05 2006",
	"Mon Jan 2 15:04:05 MST 2006",
	"Mon, Jan 2 2006 15:04:05 -0700",
	"Monday, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05",
	"2006-01-02 15:04:05 -0700",
	"2006-01-02T15:04:05Z07:00",
	"Mon, 2 Jan 2006 15.04.05 -0700",
}

// rfc5322Date is date-time of RFC 5322 §3.3 with a day name and seconds.
const rfc5322Date = "Mon, 2 Jan 2006 15:04:05 -0700"

var dateComment = regexp.MustCompile(`\([^)]*\)`)

// parseDate parses a Date header per RFC 5322 §3.3 and, failing that, a set
// of layouts seen in the wild. It returns the zero time when nothing fits.
func parseDate(v string) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	// Nearly every Date is RFC 5322's preferred form with a day name,
	// which mail.ParseDate reaches only after 24 failed layouts, each an
	// allocated error. Where this layout parses v, mail.ParseDate parses
	// it with the same layout (its first with a day name).
	if t, err := time.Parse(rfc5322Date, v); err == nil {
		return t
	}
	if t, err := mail.ParseDate(v); err == nil {
		return t
	}
	// QUIRK: comments, doubled spaces, "GMT+0100", missing commas and
	// ISO-8601 dates from scripts.
	s := dateComment.ReplaceAllString(v, " ")
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Replace(s, "GMT+", "+", 1)
	s = strings.Replace(s, "UTC+", "+", 1)
	s = strings.Replace(s, "GMT-", "-", 1)
	s = strings.Replace(s, "UTC-", "-", 1)
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// mediaType is a parsed Content-Type or Content-Disposition value.
type mediaType struct {
	media  string            // lower case
	params map[string]string // keys lower case, values decoded
	valid  bool              // the header was present and named a type/subtype
}

// parseContentType applies RFC 2045 §5.2: a missing or unusable
// Content-Type means text/plain (or the multipart's default).
func parseContentType(v, defaultType string) mediaType {
	media, params := parseParams(v)
	if media == "" {
		return mediaType{media: defaultType, params: params, valid: defaultType != "text/plain"}
	}
	if !validMediaType(media) {
		return mediaType{media: "text/plain", params: params}
	}
	return mediaType{media: media, params: params, valid: true}
}

func validMediaType(m string) bool {
	i := strings.IndexByte(m, '/')
	if i <= 0 || i == len(m)-1 {
		return false
	}
	for _, c := range m {
		if c == '/' {
			continue
		}
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`()<>@,;:\"[]?=`, c) {
			return false
		}
	}
	return strings.Count(m, "/") == 1
}

func parseDisposition(v string) (string, map[string]string) {
	return parseParams(v)
}

// parseParams parses "value; k=v; …" with RFC 2231 continuations and
// charsets (via mime.ParseMediaType) and RFC 2047 encoded-words in values
// (not standard, but what most mailers send for non-ASCII filenames).
func parseParams(v string) (string, map[string]string) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", map[string]string{}
	}
	// in2231 reports a parameter given in RFC 2231's form (name*=, name*0);
	// most headers have none, and pay nothing for the question.
	rfc2231, lower := strings.Contains(v, "*"), ""
	if rfc2231 {
		lower = strings.ToLower(v)
	}
	in2231 := func(k string) bool { return rfc2231 && strings.Contains(lower, k+"*") }
	mt, params, err := mime.ParseMediaType(v)
	if err != nil || params == nil {
		// QUIRK: duplicate parameters, unquoted specials, missing closing
		// quotes, raw 8-bit values: parse by hand rather than lose the
		// boundary or the filename.
		mt, params = parseParamsLenient(v)
	} else if rfc2231 {
		// Go drops RFC 2231 pieces in a charset other than UTF-8 and
		// US-ASCII (filename*=iso-8859-1''caf%E9.txt) without an error:
		// parameters written that way come from the lenient parse, which
		// converts every charset.
		_, lenient := parseParamsLenient(v)
		for k, lv := range lenient {
			if in2231(k) {
				params[k] = lv
			}
		}
	}
	for k, pv := range params {
		if in2231(k) {
			// RFC 2231's form is decoded already; decoding it again as
			// encoded-words would change a name that only looks like one.
			params[k] = strings.TrimSpace(fixUTF8(pv))
		} else {
			params[k] = decodeText(pv)
		}
	}
	return strings.ToLower(strings.TrimSpace(mt)), params
}

func parseParamsLenient(v string) (string, map[string]string) {
	items := splitParams(v)
	params := map[string]string{}
	type piece struct {
		n   int
		enc bool
		val string
	}
	continued := map[string][]piece{}
	for _, it := range items[1:] {
		k, val, ok := strings.Cut(it, "=")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		val = unquote(strings.TrimSpace(val))
		if k == "" {
			continue
		}
		// RFC 2231 §3 continuations (name*0, name*1*) and §4 charsets (name*).
		if base, idx, ok := strings.Cut(k, "*"); ok {
			enc := strings.HasSuffix(idx, "*")
			idx = strings.TrimSuffix(idx, "*")
			n := 0
			if idx != "" {
				if _, err := fmt.Sscanf(idx, "%d", &n); err != nil {
					continue
				}
			} else {
				enc = true
			}
			continued[base] = append(continued[base], piece{n, enc, val})
			continue
		}
		if _, dup := params[k]; !dup {
			params[k] = val
		}
	}
	for base, ps := range continued {
		// Pieces arrive in order in practice; sort defensively by index.
		// Stable, so repeated indexes keep their order, and O(k log k): a
		// 1 MiB header holds ~80k pieces, which an insertion sort over
		// reversed indexes took seconds to order.
		slices.SortStableFunc(ps, func(a, b piece) int { return cmp.Compare(a.n, b.n) })
		charset := ""
		var raw []byte
		for i, p := range ps {
			val := p.val
			if p.enc {
				if i == 0 {
					if parts := strings.SplitN(val, "'", 3); len(parts) == 3 {
						charset, val = parts[0], parts[2]
					}
				}
				raw = append(raw, percentDecode(val)...)
			} else {
				raw = append(raw, val...)
			}
		}
		params[base] = toUTF8(raw, charset, false)
	}
	return strings.TrimSpace(items[0]), params
}

func splitParams(v string) []string {
	var out []string
	quoted, escaped := false, false
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\' && quoted:
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == ';' && !quoted:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

func unquote(s string) string {
	if !strings.HasPrefix(s, `"`) {
		return s
	}
	s = strings.TrimPrefix(s, `"`)
	s = strings.TrimSuffix(s, `"`)
	return strings.ReplaceAll(strings.ReplaceAll(s, `\"`, `"`), `\\`, `\`)
}

func percentDecode(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			out = append(out, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		out = append(out, s[i])
	}
	return out
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// partFilename takes the Content-Disposition filename (RFC 2183 §2.3),
// falling back to the Content-Type name parameter that older mailers use.
func partFilename(dparams, ctparams map[string]string) string {
	name := dparams["filename"]
	if strings.TrimSpace(name) == "" {
		name = ctparams["name"]
	}
	name = strings.TrimSpace(name)
	// QUIRK: some Windows mailers send the sender's full local path.
	if i := strings.LastIndexAny(name, `/\`); i >= 0 && i < len(name)-1 {
		name = name[i+1:]
	}
	return name
}

func contentID(v string) string {
	v = strings.TrimSpace(v)
	v = strings.TrimPrefix(v, "<")
	v = strings.TrimSuffix(v, ">")
	return strings.TrimSpace(fixUTF8(v))
}

// Field is one header field, its value unfolded.
type Field struct{ Name, Value string }

// Fields returns the top-level header fields of raw whose name keep
// accepts, in the order of the message.
func Fields(raw []byte, keep func(name string) bool) []Field {
	h, _ := textproto.ReadHeader(bufio.NewReader(io.LimitReader(bytes.NewReader(raw), maxHeaderBytes)))
	out := []Field{}
	for f := h.Fields(); f.Next(); {
		if keep(f.Key()) {
			out = append(out, Field{Name: f.Key(), Value: f.Value()})
		}
	}
	return out
}
