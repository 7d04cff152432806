package api

import (
	"strconv"
	"time"

	"github.com/inboxd/inboxd/app"
)

// The JSON objects of SPEC §5.4. Every listed field is always present:
// empty values are null, false or [], never omitted.

func timeJSON(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func timePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := timeJSON(*t)
	return &s
}

func strOrNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func emptyIfNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

type inboxJSON struct {
	ID             string   `json:"id"`
	ProjectID      string   `json:"project_id"`
	Address        string   `json:"address"`
	DisplayName    *string  `json:"display_name"`
	Environment    string   `json:"environment"`
	SendPolicy     string   `json:"send_policy"`
	AllowedDomains []string `json:"allowed_domains"`
	CreatedAt      string   `json:"created_at"`
	DeferredCount  int64    `json:"deferred_count"`
}

func inboxObject(ib app.Inbox) inboxJSON {
	return inboxJSON{
		ID: ib.ID, ProjectID: ib.ProjectID, Address: ib.Address, DisplayName: strOrNull(ib.DisplayName),
		Environment: ib.Environment, SendPolicy: ib.SendPolicy, AllowedDomains: emptyIfNil(ib.AllowedDomains),
		CreatedAt: timeJSON(ib.CreatedAt), DeferredCount: ib.DeferredCount,
	}
}

type keyJSON struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Scopes      []string `json:"scopes"`
	InboxIDs    []string `json:"inbox_ids"`
	TokenPrefix string   `json:"token_prefix"`
	CreatedAt   string   `json:"created_at"`
	LastUsedAt  *string  `json:"last_used_at"`
}

func keyObject(k app.Key) keyJSON {
	return keyJSON{
		ID: k.ID, Name: k.Name, Scopes: emptyIfNil(k.Scopes), InboxIDs: k.InboxIDs, TokenPrefix: k.TokenPrefix,
		CreatedAt: timeJSON(k.CreatedAt), LastUsedAt: timePtr(k.LastUsedAt),
	}
}

type threadJSON struct {
	ID                   string `json:"id"`
	InboxID              string `json:"inbox_id"`
	Subject              string `json:"subject"`
	Preview              string `json:"preview"`
	MessageCount         int64  `json:"message_count"`
	LastMessageAt        string `json:"last_message_at"`
	LastMessageDirection string `json:"last_message_direction"`
	CreatedAt            string `json:"created_at"`
}

func (t *threadJSON) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"id":`...), t.ID)
	b = appendString(append(b, `,"inbox_id":`...), t.InboxID)
	b = appendString(append(b, `,"subject":`...), t.Subject)
	b = appendString(append(b, `,"preview":`...), t.Preview)
	b = strconv.AppendInt(append(b, `,"message_count":`...), t.MessageCount, 10)
	b = appendString(append(b, `,"last_message_at":`...), t.LastMessageAt)
	b = appendString(append(b, `,"last_message_direction":`...), t.LastMessageDirection)
	b = appendString(append(b, `,"created_at":`...), t.CreatedAt)
	return append(b, '}')
}

func threadObject(t app.Thread) threadJSON {
	return threadJSON{
		ID: t.ID, InboxID: t.InboxID, Subject: t.Subject, Preview: t.Preview, MessageCount: t.MessageCount,
		LastMessageAt: timeJSON(t.LastMessageAt), LastMessageDirection: t.LastMessageDirection, CreatedAt: timeJSON(t.CreatedAt),
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
	ID           string  `json:"id"`
	Filename     *string `json:"filename"`
	Bytes        int64   `json:"bytes"`
	ContentType  string  `json:"content_type"`
	Disposition  string  `json:"disposition"`
	ContentID    *string `json:"content_id"`
	ScanStatus   string  `json:"scan_status"`
	Downloadable bool    `json:"downloadable"`
}

func (a *attachmentJSON) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"id":`...), a.ID)
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
		ID: a.ID, Filename: strOrNull(a.Filename), Bytes: a.Bytes, ContentType: a.ContentType, Disposition: a.Disposition,
		ContentID: strOrNull(a.ContentID), ScanStatus: a.ScanStatus, Downloadable: app.Downloadable(a),
	}
}

type messageJSON struct {
	ID                    string           `json:"id"`
	ThreadID              string           `json:"thread_id"`
	InboxID               string           `json:"inbox_id"`
	Direction             string           `json:"direction"`
	Subject               string           `json:"subject"`
	Preview               string           `json:"preview"`
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
	b = appendString(append(b, `,"subject":`...), m.Subject)
	b = appendString(append(b, `,"preview":`...), m.Preview)
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

// threadMessageJSON is the message object of the thread-messages route,
// the only one that carries sequence and delivery_status.
type threadMessageJSON struct {
	messageJSON
	Sequence       int64   `json:"sequence"`
	DeliveryStatus *string `json:"delivery_status"`
}

// appendJSON writes the embedded message's fields first and then its own,
// in one object, as encoding/json flattens an embedded struct.
func (m *threadMessageJSON) appendJSON(b []byte) []byte {
	b = m.messageJSON.appendJSON(b)
	b = strconv.AppendInt(append(b[:len(b)-1], `,"sequence":`...), m.Sequence, 10)
	b = appendStringOrNull(append(b, `,"delivery_status":`...), m.DeliveryStatus)
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
		ID: m.ID, ThreadID: m.ThreadID, InboxID: m.InboxID, Direction: m.Direction, Subject: m.Subject, Preview: m.Preview,
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

type listJSON[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
}

// appendJSON is for T whose pointer is a jsonAppender (writeList checks):
// other lists go through encoding/json.
func (l *listJSON[T]) appendJSON(b []byte) []byte {
	b = appendArray(append(b, `{"data":`...), l.Data)
	b = appendStringOrNull(append(b, `,"next_cursor":`...), l.NextCursor)
	b = strconv.AppendBool(append(b, `,"has_more":`...), l.HasMore)
	return append(b, '}')
}
