package api

import (
	"bufio"
	"context"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/message"
)

func (s *Server) inboxMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	msgs, err := s.app.InboxMessages(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"),
		app.InboxMessagesParams{PageParams: pageParams(r), Q: q.Get("q"), Direction: q.Get("direction")})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, msgs.Page, func(m app.Message) messageJSON {
		return messageObject(m, msgs.Inbox.Environment, msgs.Attachments[m.ID], msgs.Deliveries[m.ID])
	})
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	v, err := s.app.Message(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "message_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	o := messageObject(v.Message, v.Inbox.Environment, v.Attachments, v.Deliveries)
	writeJSON(w, http.StatusOK, &o)
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "message_id")
	if err := s.app.DeleteMessage(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

func (s *Server) deleteInboxMessages(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "inbox_id")
	n, err := s.app.DeleteInboxMessages(r.Context(), callerFrom(r), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"inbox_id": id, "deleted_count": n})
}

// getBody streams the body object from storage: each part is decompressed,
// sanitized (html) and JSON-escaped on its way to the client, so a request
// holds a piece of the packed body and some buffers, never the text
// (issue 13: 150 MB a request for a 19 MB message when it was built in
// memory). The fields
// are in encoding/json's order for the map this route used to encode, and
// every byte is what it wrote. A failure before the first 32 KB reach the
// client is still an error response; after, the answer is cut short and
// the failure logged.
func (s *Server) getBody(w http.ResponseWriter, r *http.Request) {
	b, err := s.app.MessageBody(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "message_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	sw := &startedWriter{w: w}
	bw := bufio.NewWriterSize(sw, 32<<10)
	if err = writeBodyJSON(r.Context(), bw, b.Parts, b.Message.RawStored, cidURLs(b)); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		if !sw.started {
			s.writeError(w, r, err)
			return
		}
		s.abortStream(r, "api: body stream failed", "message", b.Message.ID, "err", err)
	}
}

// writeBodyJSON writes {"body_available","extracted_text","html",
// "original_raw_available","text"} and a newline. w's errors are sticky:
// the caller's Flush reports one that only a WriteString saw.
func writeBodyJSON(ctx context.Context, w *bufio.Writer, b app.BodyParts, rawStored bool, cid func(string) (string, bool)) error {
	w.WriteString(`{"body_available":true,"extracted_text":`)
	if !app.HasExtractedText(b) {
		w.WriteString("null")
	} else if err := writeJSONString(w, copyPart(ctx, &b.ExtractedText)); err != nil {
		return err
	}
	w.WriteString(`,"html":`)
	if b.HTML == nil {
		w.WriteString("null")
	} else if err := writeJSONString(w, func(w io.Writer) error {
		r := b.HTML.Open(ctx)
		defer r.Close()
		// Sanitized again as it is served: the policy may have tightened
		// since it was stored.
		return message.SanitizeTo(w, r, cid)
	}); err != nil {
		return err
	}
	w.WriteString(`,"original_raw_available":` + strconv.FormatBool(rawStored) + `,"text":`)
	if b.Text == nil {
		w.WriteString("null")
	} else if err := writeJSONString(w, copyPart(ctx, b.Text)); err != nil {
		return err
	}
	w.WriteString("}\n")
	return nil
}

// copyPart copies a part's text to the writer it is given.
func copyPart(ctx context.Context, p *app.BodyPart) func(io.Writer) error {
	return func(w io.Writer) error {
		r := p.Open(ctx)
		defer r.Close()
		_, err := io.Copy(w, r)
		return err
	}
}

// cidURLs maps the Content-ID of each inline part of a body (app.Body's
// Inline) to the URL it is served at; nil when there is none.
func cidURLs(b app.Body) func(string) (string, bool) {
	if b.Inline == nil {
		return nil
	}
	prefix := "/v1/projects/" + b.Inbox.ProjectID + "/inboxes/" + b.Inbox.ID + "/messages/" + b.Message.ID + "/attachments/"
	return func(id string) (string, bool) {
		att, ok := b.Inline[id]
		if !ok {
			return "", false
		}
		return prefix + att, true
	}
}

func (s *Server) getRaw(w http.ResponseWriter, r *http.Request) {
	m, stream, err := s.app.RawMessage(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "message_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": m.ID + ".eml"}))
	sw := &startedWriter{w: w}
	if err := stream(sw); err != nil {
		if !sw.started {
			w.Header().Del("Content-Disposition")
			s.writeError(w, r, err)
			return
		}
		s.abortStream(r, "api: raw stream failed", "message", m.ID, "err", err)
	}
}

// abortStream ends a response that failed after its first bytes went
// out: it logs the failure (unless the client went away) and aborts the
// connection, so that the client sees a broken transfer, never what looks
// like a complete answer that was cut short.
func (s *Server) abortStream(r *http.Request, msg string, args ...any) {
	if r.Context().Err() == nil {
		s.log.Error(msg, args...)
	}
	panic(http.ErrAbortHandler)
}

// startedWriter records whether anything was written, so a failure before
// the first byte can still become a proper error response.
type startedWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *startedWriter) Write(p []byte) (int, error) {
	s.started = true
	return s.w.Write(p)
}

func (s *Server) getAttachment(w http.ResponseWriter, r *http.Request) {
	a, stream, err := s.app.Attachment(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "message_id"), chi.URLParam(r, "attachment_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name := a.Filename
	if name == "" {
		name = a.ID
	}
	w.Header().Set("Content-Type", a.ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	sw := &startedWriter{w: w}
	if err := stream(sw); err != nil {
		if !sw.started {
			w.Header().Del("Content-Disposition")
			s.writeError(w, r, err)
			return
		}
		s.abortStream(r, "api: attachment stream failed", "attachment", a.ID, "err", err)
	}
}

type addressJSON struct {
	Email string  `json:"email"`
	Name  *string `json:"name"`
}

func (a *addressJSON) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"email":`...), a.Email)
	b = appendStringOrNull(append(b, `,"name":`...), a.Name)
	return append(b, '}')
}

func addresses(as []app.Address) []addressJSON {
	out := make([]addressJSON, 0, len(as))
	for _, a := range as {
		out = append(out, addressJSON{Email: a.Email, Name: a.Name})
	}
	return out
}

type recipientJSON struct {
	Email          string  `json:"email"`
	Type           string  `json:"type"`
	DeliveryStatus *string `json:"delivery_status"`
}

func (r *recipientJSON) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"email":`...), r.Email)
	b = appendString(append(b, `,"type":`...), r.Type)
	b = appendStringOrNull(append(b, `,"delivery_status":`...), r.DeliveryStatus)
	return append(b, '}')
}

type attachmentJSON struct {
	ID           *string `json:"id"` // null on a draft's attachment, which is not stored yet
	Filename     *string `json:"filename"`
	Bytes        int64   `json:"bytes"`
	ContentType  string  `json:"content_type"`
	Disposition  string  `json:"disposition"`
	ContentID    *string `json:"content_id"`
	ScanStatus   string  `json:"scan_status"`
	Downloadable bool    `json:"downloadable"`
}

func (a *attachmentJSON) appendJSON(b []byte) []byte {
	b = appendStringOrNull(append(b, `{"id":`...), a.ID)
	b = appendStringOrNull(append(b, `,"filename":`...), a.Filename)
	b = strconv.AppendInt(append(b, `,"bytes":`...), a.Bytes, 10)
	b = appendString(append(b, `,"content_type":`...), a.ContentType)
	b = appendString(append(b, `,"disposition":`...), a.Disposition)
	b = appendStringOrNull(append(b, `,"content_id":`...), a.ContentID)
	b = appendString(append(b, `,"scan_status":`...), a.ScanStatus)
	b = strconv.AppendBool(append(b, `,"downloadable":`...), a.Downloadable)
	return append(b, '}')
}

func attachmentObject(a app.Attachment) attachmentJSON {
	return attachmentJSON{
		ID: &a.ID, Filename: strOrNull(a.Filename), Bytes: a.Bytes, ContentType: a.ContentType, Disposition: a.Disposition,
		ContentID: strOrNull(a.ContentID), ScanStatus: a.ScanStatus, Downloadable: app.Downloadable(a),
	}
}

type messageJSON struct {
	ID                    string           `json:"id"`
	ThreadID              string           `json:"thread_id"`
	InboxID               string           `json:"inbox_id"`
	Direction             string           `json:"direction"`
	Subject               *string          `json:"subject"`
	Preview               *string          `json:"preview"`
	State                 string           `json:"state"`
	Environment           string           `json:"environment"`
	Simulated             bool             `json:"simulated"`
	Echo                  bool             `json:"echo"`
	From                  *addressJSON     `json:"from"`
	To                    []addressJSON    `json:"to"`
	Cc                    []addressJSON    `json:"cc"`
	Bcc                   []addressJSON    `json:"bcc"`
	ReplyTo               []addressJSON    `json:"reply_to"`
	Recipients            []recipientJSON  `json:"recipients"`
	Attachments           []attachmentJSON `json:"attachments"`
	CreatedAt             string           `json:"created_at"`
	BodyAvailable         bool             `json:"body_available"`
	OriginalRawAvailable  bool             `json:"original_raw_available"`
	RFCMessageID          string           `json:"rfc_message_id"`
	InReplyTo             []string         `json:"in_reply_to"`
	References            []string         `json:"references"`
	ThreadMatch           string           `json:"thread_match"`
	AddressTag            *string          `json:"address_tag"`
	ParseError            *string          `json:"parse_error"`
	RFCMessageIDGenerated bool             `json:"rfc_message_id_generated"`
}

func (m *messageJSON) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"id":`...), m.ID)
	b = appendString(append(b, `,"thread_id":`...), m.ThreadID)
	b = appendString(append(b, `,"inbox_id":`...), m.InboxID)
	b = appendString(append(b, `,"direction":`...), m.Direction)
	b = appendStringOrNull(append(b, `,"subject":`...), m.Subject)
	b = appendStringOrNull(append(b, `,"preview":`...), m.Preview)
	b = appendString(append(b, `,"state":`...), m.State)
	b = appendString(append(b, `,"environment":`...), m.Environment)
	b = strconv.AppendBool(append(b, `,"simulated":`...), m.Simulated)
	b = strconv.AppendBool(append(b, `,"echo":`...), m.Echo)
	if b = append(b, `,"from":`...); m.From == nil {
		b = append(b, "null"...)
	} else {
		b = m.From.appendJSON(b)
	}
	b = appendArray(append(b, `,"to":`...), m.To)
	b = appendArray(append(b, `,"cc":`...), m.Cc)
	b = appendArray(append(b, `,"bcc":`...), m.Bcc)
	b = appendArray(append(b, `,"reply_to":`...), m.ReplyTo)
	b = appendArray(append(b, `,"recipients":`...), m.Recipients)
	b = appendArray(append(b, `,"attachments":`...), m.Attachments)
	b = appendString(append(b, `,"created_at":`...), m.CreatedAt)
	b = strconv.AppendBool(append(b, `,"body_available":`...), m.BodyAvailable)
	b = strconv.AppendBool(append(b, `,"original_raw_available":`...), m.OriginalRawAvailable)
	b = appendString(append(b, `,"rfc_message_id":`...), m.RFCMessageID)
	b = appendArray(append(b, `,"in_reply_to":`...), m.InReplyTo)
	b = appendArray(append(b, `,"references":`...), m.References)
	b = appendString(append(b, `,"thread_match":`...), m.ThreadMatch)
	b = appendStringOrNull(append(b, `,"address_tag":`...), m.AddressTag)
	b = appendStringOrNull(append(b, `,"parse_error":`...), m.ParseError)
	b = strconv.AppendBool(append(b, `,"rfc_message_id_generated":`...), m.RFCMessageIDGenerated)
	return append(b, '}')
}

// firstToStatus is the status of the first To recipient (SPEC §5.4); null
// for inbound messages.
func firstToStatus(dels []app.DeliveryStatus) *string {
	for _, d := range dels {
		if d.Type == "to" {
			s := d.Status
			return &s
		}
	}
	return nil
}

// messageObject renders a message; dels are an outbound message's
// recipients with their delivery status.
func messageObject(m app.Message, environment string, atts []app.Attachment, dels []app.DeliveryStatus) messageJSON {
	o := messageJSON{
		ID: m.ID, ThreadID: m.ThreadID, InboxID: m.InboxID, Direction: m.Direction, Subject: strOrNull(m.Subject), Preview: strOrNull(m.Preview),
		State: m.State, Environment: environment, Simulated: m.Simulated, Echo: m.Echo,
		To: addresses(m.To), Cc: addresses(m.Cc), Bcc: addresses(m.Bcc), ReplyTo: addresses(m.ReplyTo),
		Attachments: make([]attachmentJSON, 0, len(atts)), CreatedAt: timeJSON(m.CreatedAt),
		BodyAvailable: !m.Deleted, OriginalRawAvailable: !m.Deleted && m.RawStored,
		RFCMessageID: m.RFCMessageID, InReplyTo: emptyIfNil(m.InReplyTo), References: emptyIfNil(m.References),
		ThreadMatch: m.ThreadMatch, AddressTag: m.AddressTag, ParseError: m.ParseError, RFCMessageIDGenerated: m.RFCMessageIDGenerated,
	}
	if m.From != nil {
		o.From = &addressJSON{Email: m.From.Email, Name: m.From.Name}
	}
	if m.Direction == "inbound" {
		o.Bcc = []addressJSON{} // SPEC §5.4: never shown for inbound mail
	}
	o.Recipients = make([]recipientJSON, 0, len(m.To)+len(m.Cc)+len(m.Bcc))
	for _, d := range dels {
		status := d.Status
		o.Recipients = append(o.Recipients, recipientJSON{Email: d.Email, Type: d.Type, DeliveryStatus: &status})
	}
	for _, l := range []struct {
		typ string
		as  []addressJSON
	}{{"to", o.To}, {"cc", o.Cc}, {"bcc", o.Bcc}} {
		if len(dels) > 0 {
			break
		}
		for _, a := range l.as {
			o.Recipients = append(o.Recipients, recipientJSON{Email: a.Email, Type: l.typ})
		}
	}
	for _, a := range atts {
		o.Attachments = append(o.Attachments, attachmentObject(a))
	}
	return o
}
