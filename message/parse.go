package message

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/emersion/go-message/textproto"
)

const (
	// maxDepth bounds multipart nesting so a hostile message cannot recurse
	// without limit; real mail rarely nests more than five levels.
	maxDepth = 40
	// maxParts bounds the number of leaf parts kept from one message.
	maxParts = 5000
	// maxErrors bounds how many distinct problems ParseError lists.
	maxErrors = 5
)

// parser holds the state of one Parse call.
type parser struct {
	out     *Parsed
	errs    []string
	rawHTML string // the main HTML body before sanitizing, for reply extraction
	leaves  int
	report  bool // a delivery status report was seen; only the first counts
	// bodyDone: the main body has been read (the part of a multipart/mixed
	// that gave Text or HTML): a text part after it, a list's footer say,
	// is an inline attachment, not the body.
	bodyDone bool
	spill    func() Blob
	bufs     *readBufs
}

func (ps *parser) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, e := range ps.errs {
		if e == msg {
			return
		}
	}
	if len(ps.errs) < maxErrors {
		ps.errs = append(ps.errs, msg)
	}
}

func (ps *parser) errorString() string {
	return strings.Join(ps.errs, "; ")
}

func (ps *parser) parse(r io.Reader) {
	src := &lineReader{br: ps.bufs.topReader(r)}
	h, rest, err := readHeader(src, nil)
	if err != nil {
		ps.fail("header: %v", err)
	}
	ps.headers(h)
	var body io.Reader = src.br
	if len(rest) > 0 {
		body = io.MultiReader(bytes.NewReader(rest), src.br)
	}
	ps.entity(h, body, 0, "text/plain")
}

// entity walks one MIME entity. defaultType is the media type implied when
// Content-Type is absent (RFC 2046 §5.1.5: message/rfc822 inside a digest).
func (ps *parser) entity(h textproto.Header, body io.Reader, depth int, defaultType string) {
	ct := parseContentType(h.Get("Content-Type"), defaultType)
	if strings.HasPrefix(ct.media, "multipart/") {
		if depth >= maxDepth {
			ps.fail("MIME structure nested deeper than %d levels", maxDepth)
			ps.leaf(h, mediaType{media: "application/octet-stream"}, body, false)
			return
		}
		if b := ct.params["boundary"]; b != "" {
			ps.multipart(ct, b, body, depth)
			return
		}
		// QUIRK: multipart without a boundary parameter cannot be split; RFC
		// 2045 §5.2 says to treat an unusable Content-Type as text/plain, which
		// keeps the content readable instead of dropping it.
		ps.fail("multipart without boundary")
		ct = mediaType{media: "text/plain", valid: false, params: map[string]string{}}
	}
	ps.leaf(h, ct, body, depth == 0)
}

func (ps *parser) multipart(ct mediaType, boundary string, body io.Reader, depth int) {
	capture := &captureReader{r: body, buf: ps.bufs.capture[:0], limit: 1 << 20}
	defer func() { ps.bufs.capture = capture.buf[:0] }() // kept by stop, or grown past it
	mr := newMultipartReader(ps.bufs.partReader(depth, capture), boundary)
	partDefault := "text/plain"
	if ct.media == "multipart/digest" {
		partDefault = "message/rfc822"
	}
	report := ps.startReport(ct)
	if report != nil {
		defer ps.finishReport(report)
	}
	for parts := 0; ; parts++ {
		h, part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return
		}
		if errors.Is(err, errNoBoundary) {
			switch {
			case parts == 0 && !capture.overflow && len(bytes.TrimSpace(capture.buf)) == 0:
				// QUIRK: an empty multipart, typically a nested one that
				// reuses its parent's boundary: its parts were read as the
				// parent's, so nothing is missing. An empty top-level
				// multipart means the message has no content at all.
				if depth == 0 {
					ps.fail("multipart body is empty")
				}
			case parts == 0 && !capture.overflow:
				// QUIRK: a multipart whose boundary never appears (a mailer
				// that changed the boundary, or a truncated header) still
				// carries readable content; keep it as text rather than lose it.
				ps.fail("multipart: boundary %q not found", boundary)
				ps.leaf(textproto.Header{}, mediaType{media: "text/plain", params: map[string]string{}}, bytes.NewReader(capture.buf), false)
			default:
				ps.fail("multipart: boundary %q not found", boundary)
			}
			return
		}
		if err != nil {
			// The part header had a problem but what was read is usable.
			ps.fail("part header: %v", err)
		}
		capture.stop()
		hadBody := [2]bool{ps.out.HasText, ps.out.HasHTML}
		if report != nil {
			// The report's parts are attachments as ever; the DSN reads the
			// one the part added.
			kind, before := reportPartKind(h, partDefault), len(ps.out.Attachments)
			ps.entity(h, part, depth+1, partDefault)
			if kind != "" && len(ps.out.Attachments) == before+1 {
				report.add(kind, ps.out.Attachments[before].head(maxReportPart))
			}
		} else {
			ps.entity(h, part, depth+1, partDefault)
		}
		// In a multipart/mixed (any kind but the alternatives of one body
		// and a body with its related parts), a multipart part that gave a
		// body is the main body whole (SPEC §3: text is the text/plain of
		// the main body), and text parts after it are attachments: a list
		// footer after an HTML-only alternative is not the message's text.
		// An HTML leaf that comes first is the main body too: alternatives
		// put the plain form first, so a text/plain after it is a footer.
		// A single text/plain part may still be followed by its HTML form
		// (a nested multipart reusing its parent's boundary reads so).
		if ct.media != "multipart/alternative" && ct.media != "multipart/related" && hadBody != [2]bool{ps.out.HasText, ps.out.HasHTML} {
			media := parseContentType(h.Get("Content-Type"), partDefault).media
			if strings.HasPrefix(media, "multipart/") || media == "text/html" && hadBody == [2]bool{} && !ps.out.HasText {
				ps.bodyDone = true
			}
		}
		if _, err := io.Copy(io.Discard, part); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				// QUIRK: a missing closing boundary (truncated or sloppy
				// mailers) still leaves the last part readable; it was kept.
				ps.fail("multipart: missing closing boundary")
			} else {
				ps.fail("multipart: %v", err)
			}
			return
		}
	}
}

// leaf handles a non-multipart entity: the first text/plain and text/html
// parts of the main body become Text and HTML, everything else an
// attachment. root is a message of one part: its text is the body, a
// name= on it (some mailers add one) notwithstanding, unless it is
// marked an attachment.
func (ps *parser) leaf(h textproto.Header, ct mediaType, body io.Reader, root bool) {
	ps.leaves++
	if ps.leaves > maxParts {
		if ps.leaves == maxParts+1 {
			ps.fail("more than %d parts; the rest were skipped", maxParts)
		}
		return
	}
	disp, dparams := parseDisposition(h.Get("Content-Disposition"))
	filename := partFilename(dparams, ct.params)
	cid := contentID(h.Get("Content-Id"))

	isBodyCandidate := disp != "attachment" && (filename == "" || root) && !ps.bodyDone
	isText := isBodyCandidate && (ct.media == "text/plain" && !ps.out.HasText || ct.media == "text/html" && !ps.out.HasHTML)
	var data []byte
	var large Blob
	var derr error
	switch {
	case isText:
		// Read into the parser's buffer: below, the part becomes Text or
		// HTML, a string of its own, and the buffer is kept for nothing.
		ps.bufs.scratch, derr = decodeTransferAppend(ps.bufs.scratch[:0], h.Get("Content-Transfer-Encoding"), body)
		data = ps.bufs.scratch
	case ps.spill == nil:
		data, derr = decodeTransfer(h.Get("Content-Transfer-Encoding"), body)
	default:
		large = ps.spill()
		w := &errWriter{w: large}
		derr = decodeTransferTo(w, h.Get("Content-Transfer-Encoding"), body)
		if w.err != nil && ps.out.SpillErr == nil {
			ps.out.SpillErr = w.err
		}
		if b, ok := large.Bytes(); ok {
			data, large = b, nil
		}
	}
	if derr != nil {
		what := "body"
		if filename != "" {
			what = fmt.Sprintf("part %q", filename)
		}
		ps.fail("%s: %v", what, derr)
	}

	if large == nil && h.Len() == 0 && len(bytes.TrimSpace(data)) == 0 && (ps.out.HasText || ps.out.HasHTML) {
		// QUIRK: an empty, headerless part after a stray delimiter (e.g. a
		// final boundary missing its "--") carries nothing to keep.
		return
	}
	if isText {
		if ct.media == "text/plain" {
			ps.out.HasText = true
			ps.out.Text = bodyText(data, ct.params["charset"], false)
		} else {
			ps.out.HasHTML = true
			ps.rawHTML = bodyText(data, ct.params["charset"], true)
			ps.out.HTML = Sanitize(ps.rawHTML)
		}
		return
	}

	a := Attachment{
		Filename:    filename,
		ContentType: "application/octet-stream",
		ContentID:   cid,
		Data:        data,
		Size:        int64(len(data)),
		Large:       large,
	}
	if large != nil {
		a.Size = large.Len()
	}
	if ct.valid {
		a.ContentType = ct.media
	}
	switch {
	case disp == "inline" || disp == "attachment":
		a.Disposition = disp
	case cid != "":
		a.Disposition = "inline"
	default:
		a.Disposition = "attachment"
	}
	a.ScanStatus = scanStatus(a.Filename, a.ContentType)
	ps.out.Attachments = append(ps.out.Attachments, a)
}

func (ps *parser) finish() {
	p := ps.out
	// The preview and the extracted-text fallback both want the sanitized
	// HTML as text; parsing the HTML is the costliest step, so do it once.
	var htmlText string
	haveHTMLText := false
	sanitizedText := func() string {
		if !haveHTMLText {
			htmlText, haveHTMLText = HTMLToText(p.HTML), true
		}
		return htmlText
	}
	// A text part with nothing in it beside HTML counts as none, for the
	// preview and the extracted text alike.
	hasText := p.HasText && strings.TrimSpace(p.Text) != ""
	if hasText {
		p.Preview = Preview(p.Text)
	} else if p.HasHTML {
		p.Preview = Preview(sanitizedText())
	}
	switch {
	case hasText:
		p.ExtractedText = ExtractReply(p.Text)
	case p.HasHTML:
		// Clients mark quoted history up (blockquote, gmail_quote, Outlook's
		// divRplyFwdMsg); drop it before the plain-text rules run. Use the
		// HTML before sanitizing, which strips the class names involved.
		p.ExtractedText = ExtractReply(htmlToText(ps.rawHTML, true))
		if p.ExtractedText == "" {
			p.ExtractedText = ExtractReply(sanitizedText())
		}
	}
}

func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}

// captureReader remembers the bytes read through it until stop is called,
// so a multipart body without any boundary can be re-read as text.
type captureReader struct {
	r        io.Reader
	buf      []byte
	limit    int
	overflow bool
	stopped  bool
}

func (c *captureReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if !c.stopped && !c.overflow {
		if len(c.buf)+n > c.limit {
			c.overflow = true
			c.buf = nil
		} else {
			c.buf = append(c.buf, p[:n]...)
		}
	}
	return n, err
}

func (c *captureReader) stop() {
	c.stopped = true
	c.buf = c.buf[:0] // its array is the next multipart's
}

// errWriter remembers a write error, telling a failing Blob (our fault)
// apart from a failing read of the message (the sender's).
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}
