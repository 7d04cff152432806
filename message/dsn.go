package message

import (
	"bufio"
	"bytes"
	"io"
	"strings"

	"github.com/emersion/go-message/textproto"
)

// Delivery status notifications (RFC 3464) arrive as multipart/report
// (RFC 6522) with a message/delivery-status part and, usually, the returned
// message or its header. The parts stay attachments; Parsed.DSN is what
// they say, read leniently because bounce generators are sloppy.

// Report part kinds.
const (
	reportStatus   = "status"   // message/delivery-status
	reportReturned = "returned" // message/rfc822 or text/rfc822-headers
)

// dsnReport collects the parts of one multipart/report while it is walked.
type dsnReport struct {
	typed    bool // report-type=delivery-status was declared
	status   []byte
	returned []byte
	// haveStatus and haveReturned keep the first part of each kind.
	haveStatus, haveReturned bool
}

// startReport returns a collector when ct is the first delivery status
// report of the message, nil otherwise.
func (ps *parser) startReport(ct mediaType) *dsnReport {
	if ps.report || ct.media != "multipart/report" {
		return nil
	}
	switch rt := strings.ToLower(strings.TrimSpace(ct.params["report-type"])); rt {
	case "delivery-status", "global-delivery-status":
		ps.report = true
		return &dsnReport{typed: true}
	case "":
		// QUIRK: some MTAs (Sun Internet Mail Server, CPython's msg_16)
		// omit report-type; the report still counts when it turns out to
		// hold a message/delivery-status part.
		return &dsnReport{}
	}
	return nil // a read receipt (disposition-notification), an ARF report…
}

// reportPartKind says which part of a report h introduces, "" for parts
// the DSN does not read (the human-readable explanation).
func reportPartKind(h textproto.Header, defaultType string) string {
	switch parseContentType(h.Get("Content-Type"), defaultType).media {
	case "message/delivery-status", "message/global-delivery-status":
		return reportStatus
	case "message/rfc822", "text/rfc822-headers", "message/global", "message/global-headers":
		return reportReturned
	}
	return ""
}

// maxReportPart bounds how much of a spilled report part is read back: the
// status fields and the returned headers sit at its start.
const maxReportPart = 1 << 20

// head returns the attachment's bytes, reading at most n of them back
// when they were spilled.
func (a *Attachment) head(n int64) []byte {
	if a.Large == nil {
		return a.Data
	}
	data, _ := io.ReadAll(io.LimitReader(a.Large.Reader(), n))
	return data
}

func (r *dsnReport) add(kind string, data []byte) {
	switch {
	case kind == reportStatus && !r.haveStatus:
		r.status, r.haveStatus = data, true
	case kind == reportReturned && !r.haveReturned:
		r.returned, r.haveReturned = data, true
	}
}

func (ps *parser) finishReport(r *dsnReport) {
	if !r.typed && !r.haveStatus {
		return
	}
	ps.report = true
	d := &DSN{Recipients: parseDeliveryStatus(r.status)}
	if r.haveReturned {
		d.OriginalMessageID = returnedMessageID(r.returned)
	}
	ps.out.DSN = d
}

// returnedMessageID reads the Message-ID of a returned message or header
// block, without angle brackets.
func returnedMessageID(data []byte) string {
	src := &lineReader{br: bufio.NewReader(bytes.NewReader(data))}
	h, _, _ := readHeader(src, nil)
	v := strings.TrimSpace(fixUTF8(h.Get("Message-Id")))
	if open := strings.IndexByte(v, '<'); open >= 0 {
		if end := strings.IndexByte(v[open:], '>'); end > 0 {
			return strings.TrimSpace(v[open+1 : open+end])
		}
	}
	// QUIRK: a bare id without brackets, as thread.OwnID accepts.
	if strings.ContainsAny(v, " \t<>") {
		return ""
	}
	return v
}

// parseDeliveryStatus reads the body of a message/delivery-status part
// (RFC 3464 §2.1): blocks of header-style fields separated by blank lines,
// the per-message fields first, then one block per recipient. Any block
// naming a recipient counts as a recipient block, so a report without the
// per-message block still yields its recipients.
func parseDeliveryStatus(data []byte) []DSNRecipient {
	out := []DSNRecipient{}
	fields := map[string]string{}
	last := ""
	flush := func() {
		if r, ok := dsnRecipient(fields); ok {
			out = append(out, r)
		}
		fields, last = map[string]string{}, ""
	}
	// Bare LF and CRLF are both accepted: the line is trimmed of both.
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			// RFC 5322 §2.2.3 folding (Diagnostic-Code often spans lines).
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			name, value, ok := strings.Cut(line, ":")
			name = strings.ToLower(strings.TrimSpace(name))
			if !ok || name == "" {
				last = "" // not a field; a stray line is skipped
				continue
			}
			if _, dup := fields[name]; dup {
				last = "" // the first occurrence wins
				continue
			}
			fields[name], last = strings.TrimSpace(value), name
		}
	}
	flush()
	return out
}

func dsnRecipient(f map[string]string) (DSNRecipient, bool) {
	addr, ok := f["final-recipient"]
	if !ok || typedValue(addr) == "" {
		addr, ok = f["original-recipient"]
	}
	if !ok {
		return DSNRecipient{}, false
	}
	return DSNRecipient{
		Email:      recipientAddress(addr),
		Action:     strings.ToLower(firstToken(f["action"])),
		Status:     firstToken(f["status"]),
		Diagnostic: typedValue(f["diagnostic-code"]),
	}, true
}

// typedValue returns the text after "type;" (RFC 3464 §2.3.6
// diagnostic-type ";" *text), whitespace collapsed. A value whose part
// before the first ';' is not a single token has no type and is kept whole.
func typedValue(v string) string {
	if typ, rest, ok := strings.Cut(v, ";"); ok && !strings.ContainsAny(strings.TrimSpace(typ), " \t") {
		v = rest
	}
	return strings.Join(strings.Fields(fixUTF8(v)), " ")
}

// recipientAddress reads "rfc822; user@example.com" (RFC 3464 §2.3.2).
func recipientAddress(v string) string {
	a := typedValue(v)
	// QUIRK: some generators write the address in angle brackets
	// ("rfc822;<user@example.com>") or with a trailing comment.
	if open := strings.IndexByte(a, '<'); open >= 0 {
		if end := strings.IndexByte(a[open:], '>'); end > 0 {
			a = a[open+1 : open+end]
		}
	}
	if i := strings.IndexAny(a, " \t("); i >= 0 {
		a = a[:i]
	}
	return strings.TrimSpace(a)
}

// firstToken drops a trailing comment: "5.0.0 (permanent failure)" is 5.0.0.
func firstToken(v string) string {
	v = fixUTF8(strings.TrimSpace(v))
	if i := strings.IndexAny(v, " \t(;"); i >= 0 {
		v = v[:i]
	}
	return v
}
