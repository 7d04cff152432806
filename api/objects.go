package api

import (
	"time"

	"github.com/inboxd/inboxd/store"
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
}

func inboxObject(ib store.Inbox) inboxJSON {
	return inboxJSON{
		ID: ib.ID, ProjectID: ib.ProjectID, Address: ib.Address, DisplayName: strOrNull(ib.DisplayName),
		Environment: ib.Environment, SendPolicy: ib.SendPolicy, AllowedDomains: emptyIfNil(ib.AllowedDomains),
		CreatedAt: timeJSON(ib.CreatedAt),
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

func keyObject(k store.Key) keyJSON {
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

func threadObject(t store.Thread) threadJSON {
	return threadJSON{
		ID: t.ID, InboxID: t.InboxID, Subject: t.Subject, Preview: t.Preview, MessageCount: t.MessageCount,
		LastMessageAt: timeJSON(t.LastMessageAt), LastMessageDirection: t.LastMessageDirection, CreatedAt: timeJSON(t.CreatedAt),
	}
}

type addressJSON struct {
	Email string  `json:"email"`
	Name  *string `json:"name"`
}

func addresses(as []store.Address) []addressJSON {
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

func attachmentObject(a store.Attachment) attachmentJSON {
	return attachmentJSON{
		ID: a.ID, Filename: strOrNull(a.Filename), Bytes: a.Bytes, ContentType: a.ContentType, Disposition: a.Disposition,
		ContentID: strOrNull(a.ContentID), ScanStatus: a.ScanStatus, Downloadable: a.ScanStatus == "clean",
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

// threadMessageJSON is the message object of the thread-messages route,
// the only one that carries sequence and delivery_status.
type threadMessageJSON struct {
	messageJSON
	Sequence       int64   `json:"sequence"`
	DeliveryStatus *string `json:"delivery_status"`
}

// firstToStatus is the status of the first To recipient (SPEC §5.4); null
// for inbound messages.
func firstToStatus(dels []store.DeliveryStatus) *string {
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
func messageObject(m store.Message, environment string, atts []store.Attachment, dels []store.DeliveryStatus) messageJSON {
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
