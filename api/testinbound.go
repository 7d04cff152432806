package api

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/outbound"
	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/thread"
)

type testInboundInput struct {
	InboxID     string            `json:"inbox_id"`
	From        *addressInput     `json:"from"`
	To          []addressInput    `json:"to"`
	Subject     string            `json:"subject"`
	Text        string            `json:"text"`
	HTML        string            `json:"html"`
	InReplyTo   string            `json:"in_reply_to"`
	References  []string          `json:"references"`
	Attachments []attachmentInput `json:"attachments"`
	Raw         *string           `json:"raw"`
}

// testInbound runs a simulated message through the same ingest pipeline
// as SMTP (SPEC §10), into a test inbox only.
func (s *Server) testInbound(w http.ResponseWriter, r *http.Request) {
	var in testInboundInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	k := callerFrom(r)
	if in.InboxID == "" {
		s.writeError(w, r, app.Invalidf("inbox_id", "inbox_id is required."))
		return
	}
	ib, err := s.app.GrantedInbox(r.Context(), k, in.InboxID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ib.Environment != "test" {
		s.writeError(w, r, app.Invalidf("inbox_id", "Simulated inbound mail goes to test inboxes only; %s is live.", ib.Address))
		return
	}
	var raw []byte
	if in.Raw != nil {
		if in.From != nil || len(in.To) > 0 || in.Subject != "" || in.Text != "" || in.HTML != "" || in.InReplyTo != "" || in.References != nil || in.Attachments != nil {
			s.writeError(w, r, app.Invalidf("raw", "Give either raw or the structured fields, not both."))
			return
		}
		raw = []byte(*in.Raw)
	} else {
		if in.From == nil || !outbound.ValidAddress(in.From.Email) {
			s.writeError(w, r, app.Invalidf("from", "from must be an address (\"Name <a@b>\", \"a@b\" or {email,name})."))
			return
		}
		to := addressesOf(in.To)
		if len(to) == 0 {
			to = []message.Address{{Email: ib.Address, Name: ib.DisplayName}}
		}
		d := outbound.Draft{From: message.Address(*in.From), To: to, Subject: in.Subject, Text: in.Text, HTML: in.HTML,
			MessageID: outbound.NewMessageID(domainOf(in.From.Email)), Date: s.now()}
		if in.InReplyTo != "" {
			if ids := thread.ExtractIDs([]string{in.InReplyTo}); len(ids) > 0 {
				d.InReplyTo = ids[0]
			} else {
				d.InReplyTo = strings.TrimSpace(in.InReplyTo)
			}
		}
		for _, ref := range in.References {
			if ids := thread.ExtractIDs([]string{ref}); len(ids) > 0 {
				d.References = append(d.References, ids...)
			} else if ref = strings.TrimSpace(ref); ref != "" {
				d.References = append(d.References, ref)
			}
		}
		for i, a := range in.Attachments {
			data, err := base64.StdEncoding.DecodeString(a.ContentBase64)
			if err != nil {
				s.writeError(w, r, app.Invalidf("attachments["+strconv.Itoa(i)+"].content_base64", "content_base64 is not valid base64."))
				return
			}
			ct := a.ContentType
			if ct == "" {
				ct = "application/octet-stream"
			}
			d.Attachments = append(d.Attachments, outbound.Attachment{Filename: a.Filename, ContentType: ct, Data: data})
		}
		for _, f := range []struct{ name, v string }{{"subject", in.Subject}, {"from", in.From.Name}} {
			if strings.ContainsAny(f.v, "\r\n") {
				s.writeError(w, r, app.Invalidf(f.name, "%s must not contain line breaks.", f.name))
				return
			}
		}
		if raw, err = outbound.Compose(d); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	parsed := message.Parse(raw)
	from := ""
	if parsed.From != nil {
		from = parsed.From.Email
	}
	dels, err := s.db.Ingest(r.Context(), &store.Incoming{
		Raw: raw, Trace: []byte("Received: from inboxd test API (simulated)\r\n"), Parsed: parsed,
		Envelope:   store.Envelope{MailFrom: from, RcptTo: []string{ib.Address}, RemoteIP: "127.0.0.1", Helo: "test-inbound", AuthUser: k.ID},
		Targets:    []store.Target{{InboxID: ib.ID, Address: ib.Address}},
		ReceivedAt: s.now(), Simulated: true,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d := dels[0]
	if d.Deferred {
		// Held, or a retry of a message that is still held.
		writeJSON(w, http.StatusAccepted, map[string]any{"result": "deferred"})
		return
	}
	if d.Duplicate {
		// The same message again (same Message-ID, same bytes): an SMTP
		// retry would be answered "Already stored as" and not stored twice
		// (SPEC §4), and so is this.
		writeJSON(w, http.StatusOK, map[string]any{"result": "duplicate", "message_id": d.MessageID, "thread_id": d.ThreadID, "inbox_id": d.InboxID})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"message_id": d.MessageID, "thread_id": d.ThreadID, "inbox_id": d.InboxID})
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return "localhost"
}
