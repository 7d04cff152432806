package app

import (
	"strings"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
)

// Draft is the send an approval holds, as its object shows it (SPEC §7):
// read from the exact bytes the approval is bound to.
type Draft struct {
	To, Cc, Bcc []store.Address
	ReplyTo     []store.Address
	Subject     string
	// Headers are the headers a send's "headers" set, in the order of
	// the message; X-* and Keywords as a mail reader will show them (RFC
	// 2047 words decoded, on one line; /raw has them as sent).
	Headers     []message.Field
	Text, HTML  *string // nil when the draft has no such part
	Attachments []message.Attachment
}

// DraftOf reads the draft of an approval. Bcc is kept beside the bytes:
// it is not a header of the message.
func DraftOf(ap store.Approval) Draft {
	p := message.Parse(ap.Raw)
	d := Draft{To: draftAddresses(p.To), Cc: draftAddresses(p.Cc), Bcc: draftAddresses(ap.Bcc), ReplyTo: draftAddresses(p.ReplyTo),
		Subject: p.Subject, Headers: message.Fields(ap.Raw, settableHeader), Attachments: p.Attachments}
	for i, f := range d.Headers {
		if !structuredHeader(f.Name) {
			// On one line: a decoded word may hold a line break.
			d.Headers[i].Value = strings.Map(func(r rune) rune {
				if r < ' ' && r != '\t' || r == 0x7f {
					return ' '
				}
				return r
			}, message.DecodeText(f.Value))
		}
	}
	if p.HasText {
		d.Text = &p.Text
	}
	if p.HasHTML {
		d.HTML = &p.HTML
	}
	return d
}

func draftAddresses(as []message.Address) []store.Address {
	out := make([]store.Address, len(as))
	for i, a := range as {
		out[i] = store.Address{Email: a.Email}
		if a.Name != "" {
			out[i].Name = &a.Name
		}
	}
	return out
}
