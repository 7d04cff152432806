package message

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/textproto"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	gomail "github.com/emersion/go-message/mail"
)

// setField sets a custom header, with RFC 2047 words where its value
// goes beyond ASCII or reads like an encoded-word: the whole of an
// unstructured (X-*) value, folded to 76 characters a line, and each
// phrase of Keywords' comma-separated list beyond ASCII (or like an
// encoded-word), in base64 and folded likewise (a Q
// word in a phrase may not hold the specials it would leave plain). The
// other headers a send may set are structured and must be ASCII already.
func setField(h *gomail.Header, name, value string) {
	switch {
	case strings.EqualFold(name, "Keywords"):
		phrases := strings.Split(value, ",")
		for i, p := range phrases {
			if p = strings.TrimSpace(p); !readsAsWritten(p) {
				p = strings.Join(encodeWords(p, maxWord, true), " ")
			}
			phrases[i] = p
		}
		setStructured(h, name, strings.Join(phrases, ", "))
	case len(name) > 2 && strings.EqualFold(name[:2], "x-"):
		setUnstructured(h, textproto.CanonicalMIMEHeaderKey(name), value)
	default:
		h.Set(name, mime.QEncoding.Encode("utf-8", value))
	}
}

// setUnstructured sets an unstructured field (Subject, X-*): as it is, or
// in folded encoded-words when it needs them (needsWords).
func setUnstructured(h *gomail.Header, name, value string) {
	h.Del(name)
	if !needsWords(name, value) {
		h.Set(name, value)
		return
	}
	h.AddRaw(wordsField(name, value))
}

func isASCII(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf })
}

// readsAsWritten reports text that every reader shows as it is written:
// ASCII with nothing in it that reads as an encoded-word (RFC 2047 §5).
func readsAsWritten(s string) bool { return isASCII(s) && !strings.Contains(s, "=?") }

// File is an attachment to compose.
type File struct {
	Filename    string
	ContentType string
	Data        []byte
}

// Draft is a message to compose; ids are without angle brackets.
type Draft struct {
	From            Address
	To, Cc, ReplyTo []Address
	Subject         string
	Text, HTML      string
	Attachments     []File
	Headers         map[string]string
	MessageID       string
	InReplyTo       string
	References      []string
	Date            time.Time
}

// NewMessageID returns a fresh id at domain: 128 random bits, so it is
// unique without coordination.
func NewMessageID(domain string) string {
	var b [16]byte
	rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])) + "@" + domain
}

// setAddressList sets an address field, if as has any, as go-message
// formats it (display names beyond ASCII in encoded-words), folded by
// setStructured (RFC 2047 §2 allows 76 characters for a line with
// encoded-words).
func setAddressList(h *gomail.Header, name string, as []Address) {
	if len(as) == 0 {
		return
	}
	list := make([]string, len(as))
	for i, a := range as {
		list[i] = (&gomail.Address{Name: a.Name, Address: a.Email}).String()
	}
	setStructured(h, name, strings.Join(list, ", "))
}

// setStructured sets a structured field, folded at its spaces outside
// quoted strings so that a line holds at most 76 characters where a
// space allows: go-message's folding gives up on a line whose first word
// does not fit and writes it up to 998.
func setStructured(h *gomail.Header, name, v string) {
	if len(name)+len(": ")+len(v) <= maxWordLine {
		h.Set(name, v)
		return
	}
	b := []byte(name + ":")
	n := len(b)
	for _, tok := range splitOutsideQuotes(v) {
		// A structured field may fold right after its colon; a run of
		// spaces stays on its line rather than leave one blank.
		if tok != "" && n > 0 && n+1+len(tok) > maxWordLine {
			b, n = append(b, "\r\n"...), 0
		}
		b = append(append(b, ' '), tok...)
		n += 1 + len(tok)
	}
	h.Del(name)
	h.AddRaw(append(b, "\r\n"...))
}

// splitOutsideQuotes splits v at its spaces, except inside quoted
// strings: folding there is allowed (RFC 5322 §3.2.4) but not read right
// everywhere.
func splitOutsideQuotes(v string) []string {
	var toks []string
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && quoted:
			i++ // the escaped character
		case c == '"':
			quoted = !quoted
		case c == ' ' && !quoted:
			toks, start = append(toks, v[start:i]), i+1
		}
	}
	return append(toks, v[start:])
}

// Compose builds the RFC 5322 message with go-message: CRLF line ends,
// RFC 2047 headers, quoted-printable text parts, base64 attachments with
// RFC 2231 filenames, multipart/alternative for text+html and
// multipart/mixed around it (or around the one text part) when there are
// attachments.
func Compose(d Draft) ([]byte, error) {
	var h gomail.Header
	h.SetDate(d.Date)
	setAddressList(&h, "From", []Address{d.From})
	setAddressList(&h, "To", d.To)
	setAddressList(&h, "Cc", d.Cc)
	if len(d.To)+len(d.Cc) == 0 {
		// Bcc only: an empty group says so, as mail servers write it
		// (RFC 5322 §3.6.3 allows no To, but filters score its absence).
		h.Set("To", "undisclosed-recipients:;")
	}
	setAddressList(&h, "Reply-To", d.ReplyTo)
	setUnstructured(&h, "Subject", d.Subject)
	h.SetMessageID(d.MessageID)
	if d.InReplyTo != "" {
		h.SetMsgIDList("In-Reply-To", []string{d.InReplyTo})
	}
	if len(d.References) > 0 {
		h.SetMsgIDList("References", d.References)
	}
	h.Set("MIME-Version", "1.0")
	// Fields are added at the top: in reverse, they read in sorted order.
	for _, k := range slices.Backward(slices.Sorted(maps.Keys(d.Headers))) {
		setField(&h, k, d.Headers[k])
	}

	var buf bytes.Buffer
	hasText, hasHTML := d.Text != "", d.HTML != ""
	// The one body part when there are not two: text/plain, even empty
	// (never a body-less message), or text/html alone.
	single, singleBody := "text/plain", d.Text
	if hasHTML && !hasText {
		single, singleBody = "text/html", d.HTML
	}
	// writeAlternative writes text and html into iw, just created (or
	// not, with err), and closes it.
	writeAlternative := func(iw *gomail.InlineWriter, err error) error {
		if err != nil {
			return fmt.Errorf("compose: %w", err)
		}
		if err := writePart(iw.CreatePart, "text/plain", d.Text); err != nil {
			return err
		}
		if err := writePart(iw.CreatePart, "text/html", d.HTML); err != nil {
			return err
		}
		if err := iw.Close(); err != nil {
			return fmt.Errorf("compose: %w", err)
		}
		return nil
	}
	switch {
	case len(d.Attachments) == 0 && !(hasText && hasHTML):
		h.SetContentType(single, map[string]string{"charset": "utf-8"})
		h.Set("Content-Transfer-Encoding", "quoted-printable")
		w, err := gomail.CreateSingleInlineWriter(&buf, h)
		if err != nil {
			return nil, fmt.Errorf("compose: %w", err)
		}
		if _, err := io.WriteString(w, singleBody); err != nil {
			return nil, fmt.Errorf("compose: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("compose: %w", err)
		}
	case len(d.Attachments) == 0:
		if err := writeAlternative(gomail.CreateInlineWriter(&buf, h)); err != nil {
			return nil, err
		}
	default:
		mw, err := gomail.CreateWriter(&buf, h)
		if err != nil {
			return nil, fmt.Errorf("compose: %w", err)
		}
		if hasText && hasHTML {
			err = writeAlternative(mw.CreateInline())
		} else {
			// One body is a part of its own, not an alternative of one.
			err = writePart(mw.CreateSingleInline, single, singleBody)
		}
		if err != nil {
			return nil, err
		}
		for _, a := range d.Attachments {
			var ah gomail.AttachmentHeader
			// SetContentType formats the type with its parameters; a type
			// that already carries them (or does not parse) would come out
			// as an empty header, so they are taken apart first.
			mt, params, err := mime.ParseMediaType(a.ContentType)
			if err != nil || !strings.Contains(mt, "/") {
				mt, params = "application/octet-stream", nil
			}
			ah.SetContentType(mt, params)
			ah.Set("Content-Disposition", attachmentDisposition(a.Filename))
			w, err := mw.CreateAttachment(ah)
			if err != nil {
				return nil, fmt.Errorf("compose attachment: %w", err)
			}
			if _, err := w.Write(a.Data); err != nil {
				return nil, fmt.Errorf("compose attachment: %w", err)
			}
			if err := w.Close(); err != nil {
				return nil, fmt.Errorf("compose attachment: %w", err)
			}
		}
		if err := mw.Close(); err != nil {
			return nil, fmt.Errorf("compose: %w", err)
		}
	}
	// A message ends with a line break, so the stored bytes are exactly
	// what SMTP carries (RFC 5321 §4.1.1.4).
	if !bytes.HasSuffix(buf.Bytes(), []byte("\r\n")) {
		buf.WriteString("\r\n")
	}
	return buf.Bytes(), nil
}

// writePart writes a text part of type ct with create.
func writePart(create func(gomail.InlineHeader) (io.WriteCloser, error), ct, body string) error {
	var ph gomail.InlineHeader
	ph.SetContentType(ct, map[string]string{"charset": "utf-8"})
	w, err := create(ph)
	if err != nil {
		return fmt.Errorf("compose %s: %w", ct, err)
	}
	if _, err := io.WriteString(w, body); err != nil {
		return fmt.Errorf("compose %s: %w", ct, err)
	}
	return w.Close()
}

// maxParamPiece bounds one piece of an RFC 2231 parameter, so that
// " filename*NN*=" and the piece fit a 76-character header line.
const maxParamPiece = 60

// attachmentDisposition is an attachment's Content-Disposition: the
// filename quoted when it is ASCII, short, and reads as nothing else,
// else in RFC 2231's encoded form (filename*=utf-8 and the name
// percent-encoded; an encoded-word inside quotes is what RFC 2047 §5
// forbids, and a name that looks like one would be decoded), split into
// numbered pieces when long (RFC 2231 §3) so the header folds between
// them rather than inside the name.
func attachmentDisposition(filename string) string {
	d := mime.FormatMediaType("attachment", map[string]string{"filename": filename})
	if readsAsWritten(filename) && len(d) <= len("attachment; ")+maxWord {
		return d
	}
	ext := "utf-8''" + percentEncode(filename)
	if len(ext) <= maxParamPiece {
		return "attachment; filename*=" + ext
	}
	var b strings.Builder
	b.WriteString("attachment")
	for n := 0; ext != ""; n++ {
		cut := min(len(ext), maxParamPiece)
		if i := strings.LastIndexByte(ext[:cut], '%'); cut < len(ext) && i > cut-3 {
			cut = i // a %XX escape stays whole
		}
		fmt.Fprintf(&b, "; filename*%d*=%s", n, ext[:cut])
		ext = ext[cut:]
	}
	return b.String()
}

// percentEncode is s as an RFC 2231 value: attribute-chars (RFC 2045's
// token characters but "*", "'" and "%") as they are, every other byte
// as %XX.
func percentEncode(s string) string {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if c > ' ' && c < 0x7f && !strings.ContainsRune(`*'%()<>@,;:\"/[]?=`, rune(c)) {
			b.WriteByte(c)
		} else {
			b.Write([]byte{'%', upperHex[c>>4], upperHex[c&15]})
		}
	}
	return b.String()
}

// ValidAddress reports whether s is a usable mailbox address: one @, a
// non-empty local part (UTF-8 allowed, RFC 6532) and a domain, with no
// whitespace, brackets or control characters.
func ValidAddress(s string) bool {
	at := strings.IndexByte(s, '@')
	if at <= 0 || strings.Count(s, "@") != 1 || at == len(s)-1 || len(s) > 254 || !utf8.ValidString(s) {
		return false
	}
	if strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune("<>()[],;:\\\"", r)
	}) {
		return false
	}
	domain := s[at+1:]
	return !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".") && !strings.Contains(domain, "..")
}

// ValidMediaType reports whether s is a MIME type an attachment can carry:
// type/subtype, optionally with parameters, on one line.
func ValidMediaType(s string) bool {
	if strings.ContainsAny(s, "\r\n") {
		return false
	}
	mt, _, err := mime.ParseMediaType(s)
	if err != nil {
		return false
	}
	typ, sub, ok := strings.Cut(mt, "/")
	return ok && typ != "" && sub != "" && !strings.Contains(sub, "/")
}
