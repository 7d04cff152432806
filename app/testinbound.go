package app

import (
	"context"
	"strings"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/thread"
)

// TestInboundInput is the input of TestInbound: a message as raw RFC 5322
// text, or in the structured fields (from is then required, to defaults
// to the inbox).
type TestInboundInput struct {
	InboxID     string            `json:"inbox_id"`
	From        *AddressInput     `json:"from"`
	To          []AddressInput    `json:"to"`
	Subject     string            `json:"subject"`
	Text        string            `json:"text"`
	HTML        string            `json:"html"`
	InReplyTo   string            `json:"in_reply_to"`
	References  []string          `json:"references"`
	Attachments []AttachmentInput `json:"attachments"`
	Raw         *string           `json:"raw"`
}

// TestInbound runs a simulated message through the same ingest pipeline
// as SMTP (SPEC §10), into a test inbox only. The outcome is the ingest's:
// stored, deferred (held for its parent), or a duplicate of a message
// stored already (same Message-ID, same bytes), which is not stored twice,
// as an SMTP retry would not be (SPEC §4).
func (a *App) TestInbound(ctx context.Context, c Caller, decode Decoder) (store.Delivered, error) {
	if err := c.Need("test:write"); err != nil {
		return store.Delivered{}, err
	}
	var in TestInboundInput
	if err := decode(&in); err != nil {
		return store.Delivered{}, err
	}
	if in.InboxID == "" {
		return store.Delivered{}, Invalidf("inbox_id", "inbox_id is required.")
	}
	ib, err := a.GrantedInbox(ctx, c, in.InboxID)
	if err != nil {
		return store.Delivered{}, err
	}
	if ib.Environment != "test" {
		return store.Delivered{}, Invalidf("inbox_id", "Simulated inbound mail goes to test inboxes only; %s is live.", ib.Address)
	}
	var raw []byte
	if in.Raw != nil {
		if in.From != nil || len(in.To) > 0 || in.Subject != "" || in.Text != "" || in.HTML != "" || in.InReplyTo != "" || in.References != nil || in.Attachments != nil {
			return store.Delivered{}, Invalidf("raw", "Give either raw or the structured fields, not both.")
		}
		if strings.TrimSpace(*in.Raw) == "" {
			return store.Delivered{}, Invalidf("raw", "raw is empty; give an RFC 5322 message.")
		}
		raw = []byte(*in.Raw)
	} else if raw, err = a.composeSimulated(ib, in); err != nil {
		return store.Delivered{}, err
	}
	parsed := message.Parse(raw)
	from := ""
	if parsed.From != nil {
		from = parsed.From.Email
	}
	dels, err := a.db.Ingest(ctx, &store.Incoming{
		Raw: raw, Trace: []byte("Received: from inboxd test API (simulated)\r\n"), Parsed: parsed,
		Envelope:   store.Envelope{MailFrom: from, RcptTo: []string{ib.Address}, RemoteIP: "127.0.0.1", Helo: "test-inbound", AuthUser: c.ID},
		Targets:    []store.Target{{InboxID: ib.ID, Address: ib.Address}},
		ReceivedAt: a.now(), Simulated: true,
	})
	if err != nil {
		return store.Delivered{}, err
	}
	return dels[0], nil
}

// composeSimulated checks the structured form of a simulated message and
// composes it.
func (a *App) composeSimulated(ib store.Inbox, in TestInboundInput) ([]byte, error) {
	if in.From == nil || !message.ValidAddress(in.From.Email) {
		return nil, Invalidf("from", "from must be an address (\"Name <a@b>\", \"a@b\" or {email,name}).")
	}
	to := AddressesOf(in.To)
	if err := validateAddresses("to", to); err != nil {
		return nil, err
	}
	if len(to) == 0 {
		to = []message.Address{{Email: ib.Address, Name: ib.DisplayName}}
	}
	m := message.Draft{From: message.Address(*in.From), To: to, Subject: in.Subject, Text: in.Text, HTML: in.HTML, Date: a.now(),
		MessageID: message.NewMessageID(domainOf(in.From.Email))}
	if in.InReplyTo != "" {
		if ids := thread.ExtractIDs([]string{in.InReplyTo}); len(ids) > 0 {
			m.InReplyTo = ids[0]
		} else {
			m.InReplyTo = strings.TrimSpace(in.InReplyTo)
		}
	}
	for _, ref := range in.References {
		if ids := thread.ExtractIDs([]string{ref}); len(ids) > 0 {
			m.References = append(m.References, ids...)
		} else if ref = strings.TrimSpace(ref); ref != "" {
			m.References = append(m.References, ref)
		}
	}
	files, err := Files(in.Attachments)
	if err != nil {
		return nil, err
	}
	m.Attachments = files
	for _, f := range []struct{ name, v string }{{"subject", in.Subject}, {"from", in.From.Name}} {
		if strings.ContainsAny(f.v, "\r\n") {
			return nil, Invalidf(f.name, "%s must not contain line breaks.", f.name)
		}
	}
	return message.Compose(m)
}
