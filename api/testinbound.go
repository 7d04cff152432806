package api

import (
	"net/http"
	"strings"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/outbound"
)

// testInbound runs a simulated message through the same ingest pipeline
// as SMTP (SPEC §10), into a test inbox only (app.TestInbound).
func (s *Server) testInbound(w http.ResponseWriter, r *http.Request) {
	d, err := s.app.TestInbound(r.Context(), callerFrom(r), s.decoder(w, r))
	switch {
	case err != nil:
		s.writeError(w, r, err)
	case d.Deferred:
		// Held, or a retry of a message that is still held.
		writeJSON(w, http.StatusAccepted, map[string]any{"result": "deferred"})
	case d.Duplicate:
		// The same message again: an SMTP retry would be answered
		// "Already stored as" and not stored twice (SPEC §4), and so is this.
		writeJSON(w, http.StatusOK, map[string]any{"result": "duplicate", "message_id": d.MessageID, "thread_id": d.ThreadID, "inbox_id": d.InboxID})
	default:
		writeJSON(w, http.StatusCreated, map[string]any{"message_id": d.MessageID, "thread_id": d.ThreadID, "inbox_id": d.InboxID})
	}
}

// composer is outbound's composition as app.Composer: app may not import
// outbound (STYLE.md), so whoever wires app hands it over.
type composer struct{}

func (composer) ValidAddress(email string) bool { return outbound.ValidAddress(email) }

func (composer) Compose(m app.Mail) ([]byte, error) {
	d := outbound.Draft{From: m.From, To: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML,
		MessageID: outbound.NewMessageID(domainOf(m.From.Email)), InReplyTo: m.InReplyTo, References: m.References, Date: m.Date}
	for _, a := range m.Attachments {
		d.Attachments = append(d.Attachments, outbound.Attachment(a))
	}
	return outbound.Compose(d)
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return "localhost"
}
