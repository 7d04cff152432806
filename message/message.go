// Package message owns inboxd's view of an email: the domain types for a
// parsed message (addresses, bodies, attachments) and the rules that turn raw
// RFC 5322 / MIME bytes into them — body selection, charset conversion, header
// decoding, the preview, the extracted reply text and HTML sanitizing.
//
// It is pure: no SQL, no network, no logging. Parsing is lenient by design
// (SPEC §3: mail is never lost for being malformed), so Parse never fails;
// whatever could not be read is described in Parsed.ParseError.
package message

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"time"
)

// Address is one mailbox from an address header.
type Address struct {
	Email string // best-effort address, "" if none could be found
	Name  string // decoded display name, "" if none
}

// Attachment is a non-body leaf part, or an inline part with a Content-ID.
type Attachment struct {
	Filename    string // RFC 2231 / RFC 2047 decoded; "" when none
	ContentType string // lower-case media type; "application/octet-stream" when missing/bad
	Disposition string // "attachment" or "inline"
	ContentID   string // without angle brackets, "" when none
	ScanStatus  string // "clean" or "suspicious"
	Data        []byte // decoded bytes (base64/QP undone); nil when Large holds them
	Size        int64  // number of decoded bytes
	// Large holds the decoded bytes instead of Data when they outgrew
	// memory (see Options.Spill). Parsed.Close releases it.
	Large Blob
}

// Blob is storage for decoded attachment bytes that may be too large for
// memory. The caller provides it (a spool file, typically), so this package
// does no I/O of its own.
type Blob interface {
	io.Writer
	// Bytes returns the content while it is held in memory; ok is false
	// once it has moved elsewhere.
	Bytes() (data []byte, ok bool)
	Len() int64
	// Reader reads the content from the start.
	Reader() io.Reader
	Close() error
}

// Options tune parsing for large messages.
type Options struct {
	// Spill, when set, returns an empty Blob for each attachment's decoded
	// bytes, so a 20 MB attachment is never held in memory whole. Without
	// it, attachments are decoded into Data.
	Spill func() Blob
}

// Parsed is everything inboxd keeps from a message's MIME structure.
type Parsed struct {
	Subject          string    // RFC 2047 / RFC 6532 decoded, unfolded
	From             *Address  // nil when absent
	To, Cc, ReplyTo  []Address // never nil
	Date             time.Time // zero when absent or unparseable
	MessageID        []string  // raw (unfolded) values of every Message-ID header, in order
	InReplyTo        []string  // raw values of every In-Reply-To header, in order
	References       []string  // raw values of every References header, in order
	Text             string    // decoded text/plain of the main body, UTF-8
	HTML             string    // decoded text/html of the main body, UTF-8, sanitized
	HasText, HasHTML bool      // whether such a part existed (an empty part still counts)
	Preview          string    // see Preview
	ExtractedText    string    // see ExtractReply
	Attachments      []Attachment
	// DSN is the machine-readable part of a delivery status notification
	// (RFC 3464), nil unless the message is a multipart/report of
	// report-type delivery-status. Its parts are still kept as attachments.
	DSN        *DSN
	ParseError string // "" when parsed fully; otherwise what went wrong
	// SpillErr is set when a Blob from Options.Spill failed to take the
	// decoded bytes (a full disk): the attachment is incomplete through no
	// fault of the message, so the caller should refuse it for now.
	SpillErr error
}

// DSN is what a delivery status notification says about a message we sent.
type DSN struct {
	// OriginalMessageID is the returned message's Message-ID (from the
	// message/rfc822 or text/rfc822-headers part), without angle brackets;
	// "" when the report returned no headers or they carry no Message-ID.
	OriginalMessageID string
	Recipients        []DSNRecipient // never nil; in report order
}

// DSNRecipient is one per-recipient block of a message/delivery-status part
// (RFC 3464 §2.3).
type DSNRecipient struct {
	Email      string // from Final-Recipient, else Original-Recipient, without the address type
	Action     string // lower case: failed, delayed, delivered, relayed, expanded; "" when absent
	Status     string // the RFC 3463 code, e.g. "5.1.1", without any comment
	Diagnostic string // Diagnostic-Code after its type, e.g. "550 5.1.1 user unknown", unfolded
}

// Parse reads a raw RFC 5322 message. It never fails and never panics:
// whatever can be read is returned, with ParseError set when something could
// not be parsed.
func Parse(raw []byte) *Parsed {
	return ParseReader(bytes.NewReader(raw), Options{})
}

// ParseReader is Parse for a message read from r, which is read once, in
// order. Errors reading r are reported in ParseError like malformed input.
func ParseReader(r io.Reader, opts Options) (p *Parsed) {
	p = &Parsed{
		To:          []Address{},
		Cc:          []Address{},
		ReplyTo:     []Address{},
		MessageID:   []string{},
		InReplyTo:   []string{},
		References:  []string{},
		Attachments: []Attachment{},
	}
	ps := &parser{out: p, spill: opts.Spill, bufs: bufPool.Get().(*readBufs)}
	defer ps.bufs.release()
	defer func() {
		// A bug in a dependency or here must not lose the message: the caller
		// still stores the raw bytes, and ParseError says why fields are empty.
		if r := recover(); r != nil {
			ps.fail("internal error: parser panicked")
			p.ParseError = ps.errorString()
		}
	}()
	ps.parse(r)
	ps.finish()
	p.ParseError = ps.errorString()
	return p
}

// OriginalHTML returns the main HTML body of a raw message as it was
// received (decoded to UTF-8, not sanitized) and whether it has one: the
// HTML that Parse sanitizes, for what sanitizing removed that a reader may
// still ask for (remote images, SanitizeFrameTo). Attachments are read
// past and not kept. Like Parse it never fails.
func OriginalHTML(raw io.Reader) (html string, ok bool) {
	ps := &parser{out: &Parsed{}, spill: func() Blob { return &discard{} }, bufs: bufPool.Get().(*readBufs)}
	defer ps.bufs.release()
	defer func() {
		if r := recover(); r != nil { // as in ParseReader
			html, ok = "", false
		}
	}()
	ps.parse(raw)
	return ps.rawHTML, ps.out.HasHTML
}

// discard is a Blob that keeps only the length of what it is given.
type discard struct{ n int64 }

func (d *discard) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }
func (d *discard) Bytes() ([]byte, bool)       { return nil, false }
func (d *discard) Len() int64                  { return d.n }
func (d *discard) Reader() io.Reader           { return strings.NewReader("") }
func (d *discard) Close() error                { return nil }

// Close releases the Large blobs of the attachments.
func (p *Parsed) Close() error {
	var errs []error
	for i := range p.Attachments {
		if b := p.Attachments[i].Large; b != nil {
			errs = append(errs, b.Close())
			p.Attachments[i].Large = nil
		}
	}
	return errors.Join(errs...)
}
