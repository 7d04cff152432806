package mcp

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/inboxd/inboxd/app"
)

// The objects of the tools' structured results: those of the REST API
// (SPEC §5.4), thinned to what an agent reads, with every string that
// people outside inboxd wrote inside the result's fence. Every field is
// always present; lists are [] when empty, never null.

func timeJSON(t time.Time) string { return app.FormatTime(t) }

func timePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	return ptr(timeJSON(*t))
}

func strOrNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// listCut is how long a string of a list row may be, in characters: a
// list is for finding things, and one long subject must not crowd the
// others out. The read tools show them whole.
const listCut = 1000

// cut shortens s to n characters, marking the cut with an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if n == 0 {
			i = k
			break
		}
		n--
	}
	return s[:i] + "…"
}

type inboxJSON struct {
	ID             string   `json:"id"`
	Address        string   `json:"address" jsonschema:"fenced: under an accept policy that creates inboxes, the sender of the first mail chose it"`
	DisplayName    *string  `json:"display_name"`
	Environment    string   `json:"environment" jsonschema:"live or test (a test inbox never sends outside inboxd)"`
	SendPolicy     string   `json:"send_policy" jsonschema:"allow, approve_all or approve_external: which sends wait for a person's approval"`
	AllowedDomains []string `json:"allowed_domains"`
	CreatedAt      string   `json:"created_at"`
	DeferredCount  int64    `json:"deferred_count" jsonschema:"inbound messages held for up to ten minutes while their thread is found"`
}

// inboxObject renders an inbox. Its address is fenced: under --accept
// domain or any, mail to a new address creates the inbox, so a stranger
// wrote the address (RCPT TO), and nothing marks which inboxes those are.
func inboxObject(ib app.Inbox, f *fence) inboxJSON {
	d := ib.AllowedDomains
	if d == nil {
		d = []string{}
	}
	return inboxJSON{ID: ib.ID, Address: f.wrap(ib.Address), DisplayName: strOrNull(ib.DisplayName), Environment: ib.Environment,
		SendPolicy: ib.SendPolicy, AllowedDomains: d, CreatedAt: timeJSON(ib.CreatedAt), DeferredCount: ib.DeferredCount}
}

type threadJSON struct {
	ID                   string `json:"id"`
	InboxID              string `json:"inbox_id"`
	Subject              string `json:"subject" jsonschema:"fenced"`
	Preview              string `json:"preview" jsonschema:"the start of the newest message, fenced"`
	MessageCount         int64  `json:"message_count"`
	LastMessageAt        string `json:"last_message_at"`
	LastMessageDirection string `json:"last_message_direction"`
	CreatedAt            string `json:"created_at"`
}

// threadObject renders a thread row; n cuts its strings (0: whole).
func threadObject(t app.Thread, f *fence, n int) threadJSON {
	return threadJSON{ID: t.ID, InboxID: t.InboxID, Subject: f.wrap(cutTo(t.Subject, n)), Preview: f.wrap(cutTo(t.Preview, n)),
		MessageCount: t.MessageCount, LastMessageAt: timeJSON(t.LastMessageAt), LastMessageDirection: t.LastMessageDirection,
		CreatedAt: timeJSON(t.CreatedAt)}
}

func cutTo(s string, n int) string {
	if n == 0 {
		return s
	}
	return cut(s, n)
}

type addressJSON struct {
	Email string  `json:"email" jsonschema:"fenced"`
	Name  *string `json:"name" jsonschema:"fenced; null when none"`
}

// addresses renders a list of addresses; n cuts their strings (0: whole).
func addresses(as []app.Address, f *fence, n int) []addressJSON {
	out := make([]addressJSON, 0, len(as))
	for _, a := range as {
		var name *string
		if a.Name != nil {
			name = f.wrapPtr(strOrNull(cutTo(*a.Name, n)))
		}
		out = append(out, addressJSON{Email: f.wrap(cutTo(a.Email, n)), Name: name})
	}
	return out
}

type attachmentJSON struct {
	ID           *string `json:"id" jsonschema:"null for a draft's attachment, which is not stored yet"`
	Filename     *string `json:"filename" jsonschema:"fenced; null when the part has none"`
	ContentType  string  `json:"content_type" jsonschema:"fenced: the sender wrote it"`
	Bytes        int64   `json:"bytes"`
	Disposition  string  `json:"disposition" jsonschema:"attachment or inline"`
	Downloadable bool    `json:"downloadable" jsonschema:"whether the scan found it clean; only then the REST API serves it"`
}

func attachments(atts []app.Attachment, f *fence, n int) []attachmentJSON {
	out := make([]attachmentJSON, 0, len(atts))
	for _, a := range atts {
		out = append(out, attachmentJSON{ID: &a.ID, Filename: f.wrapPtr(strOrNull(cutTo(a.Filename, n))), ContentType: f.wrap(cutTo(a.ContentType, n)),
			Bytes: a.Bytes, Disposition: a.Disposition, Downloadable: app.Downloadable(a)})
	}
	return out
}

type recipientJSON struct {
	Email          string `json:"email" jsonschema:"fenced"`
	Type           string `json:"type" jsonschema:"to, cc or bcc"`
	DeliveryStatus string `json:"delivery_status"`
}

// messageJSON is a message's metadata.
type messageJSON struct {
	ID             string           `json:"id"`
	ThreadID       string           `json:"thread_id"`
	InboxID        string           `json:"inbox_id"`
	Sequence       int64            `json:"sequence" jsonschema:"its place in its thread: 1, 2, 3, … in the order the messages entered the inbox"`
	Direction      string           `json:"direction" jsonschema:"inbound (received) or outbound (sent from the inbox)"`
	State          string           `json:"state" jsonschema:"received for inbound mail; queued, sending, sent, delivered, deferred, bounced, failed or captured for outbound"`
	DeliveryStatus *string          `json:"delivery_status" jsonschema:"outbound: the delivery status of the first To recipient; null for inbound"`
	Echo           bool             `json:"echo" jsonschema:"an inbound copy of one of the inbox's own sends (skip it)"`
	Simulated      bool             `json:"simulated" jsonschema:"simulated inbound mail of a test inbox"`
	Environment    string           `json:"environment" jsonschema:"the inbox's: live or test"`
	AddressTag     *string          `json:"address_tag" jsonschema:"fenced; the +tag of the address the mail came to (inbox+tag@…); null when none"`
	ParseError     *string          `json:"parse_error" jsonschema:"fenced; why the MIME could not be read whole (the raw message is kept); null when it could"`
	Recipients     []recipientJSON  `json:"recipients" jsonschema:"outbound: each recipient with its delivery status; [] for inbound"`
	From           *addressJSON     `json:"from"`
	To             []addressJSON    `json:"to"`
	Cc             []addressJSON    `json:"cc"`
	Bcc            []addressJSON    `json:"bcc" jsonschema:"outbound only; [] for inbound"`
	ReplyTo        []addressJSON    `json:"reply_to"`
	AddressesCut   bool             `json:"addresses_cut" jsonschema:"to, cc, bcc or reply_to was cut to its first addresses here; get_message shows them all"`
	Subject        string           `json:"subject" jsonschema:"fenced"`
	CreatedAt      string           `json:"created_at"`
	Attachments    []attachmentJSON `json:"attachments"`
	MetadataCut    bool             `json:"metadata_cut" jsonschema:"the attachment list, or (for a message too large to show whole) the subject, names and address lists, were cut here; the REST API shows them whole"`
}

// How many addresses and attachments each list of a message shows
// outside get_message: a message to thousands, or with thousands of
// parts, must not keep a list or a thread from showing (or paging past)
// it.
const (
	listAddresses   = 10 // in a list of messages
	threadAddresses = 50 // in read_thread and wait_for_message
)

// A message whose metadata no result could hold whole is shown with its
// strings and lists cut to these, whatever the tool: at most about 60
// strings of 200 characters, which fit the default max_chars even
// JSON-escaped, so a stranger's message cannot stop wait_for_message
// (or read_thread) from getting past it.
const (
	compactCut  = 200
	compactMost = 5
)

// messageObject renders a message's metadata; n cuts its strings and
// most its address lists and attachments (0: whole).
func messageObject(m app.Message, environment string, atts []app.Attachment, dels []app.DeliveryStatus, f *fence, n, most int) messageJSON {
	attsCut := most > 0 && len(atts) > most
	if attsCut {
		atts = atts[:most]
	}
	o := messageJSON{ID: m.ID, ThreadID: m.ThreadID, InboxID: m.InboxID, Sequence: m.Sequence, Direction: m.Direction,
		State: m.State, Echo: m.Echo, Simulated: m.Simulated, Environment: environment, Subject: f.wrap(cutTo(m.Subject, n)), CreatedAt: timeJSON(m.CreatedAt),
		Attachments: attachments(atts, f, n), MetadataCut: attsCut, Recipients: []recipientJSON{}}
	if m.AddressTag != nil {
		o.AddressTag = f.wrapPtr(strOrNull(cutTo(*m.AddressTag, n)))
	}
	if m.ParseError != nil {
		o.ParseError = f.wrapPtr(strOrNull(cutTo(*m.ParseError, n)))
	}
	rcpts := dels
	if most > 0 && len(rcpts) > most {
		rcpts, o.AddressesCut = rcpts[:most], true
	}
	for _, d := range rcpts {
		o.Recipients = append(o.Recipients, recipientJSON{Email: f.wrap(cutTo(d.Email, n)), Type: d.Type, DeliveryStatus: d.Status})
	}
	for _, l := range []struct {
		dst *[]addressJSON
		as  []app.Address
	}{{&o.To, m.To}, {&o.Cc, m.Cc}, {&o.Bcc, m.Bcc}, {&o.ReplyTo, m.ReplyTo}} {
		as := l.as
		if most > 0 && len(as) > most {
			as, o.AddressesCut = as[:most], true
		}
		*l.dst = addresses(as, f, n)
	}
	if m.From != nil {
		o.From = &addresses([]app.Address{*m.From}, f, n)[0]
	}
	if m.Direction == "inbound" {
		o.Bcc = []addressJSON{}
	}
	for _, d := range dels {
		if d.Type == "to" {
			s := d.Status
			o.DeliveryStatus = &s
			break
		}
	}
	return o
}

// The text renderings.

// addressText is one address as a person writes it, already fenced.
func addressText(a addressJSON) string {
	if a.Name != nil {
		return *a.Name + " " + a.Email
	}
	return a.Email
}

func addressesText(as []addressJSON) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = addressText(a)
	}
	return strings.Join(s, ", ")
}

// writeMessageText writes a message's metadata as lines of text.
func writeMessageText(b *strings.Builder, o messageJSON) {
	fmt.Fprintf(b, "Message %s (#%d of thread %s) · %s · %s", o.ID, o.Sequence, o.ThreadID, o.Direction, o.State)
	if o.DeliveryStatus != nil && *o.DeliveryStatus != o.State {
		fmt.Fprintf(b, " (first recipient: %s)", *o.DeliveryStatus)
	}
	fmt.Fprintf(b, " · %s", o.CreatedAt)
	if o.Echo {
		b.WriteString(" · echo of a message this inbox sent")
	}
	if o.Simulated {
		b.WriteString(" · simulated")
	}
	if o.Environment == "test" {
		b.WriteString(" · test inbox")
	}
	b.WriteString("\n")
	if o.AddressTag != nil {
		fmt.Fprintf(b, "Address tag: %s\n", *o.AddressTag)
	}
	if o.ParseError != nil {
		fmt.Fprintf(b, "Could not be read whole: %s\n", *o.ParseError)
	}
	if o.From != nil {
		fmt.Fprintf(b, "From: %s\n", addressText(*o.From))
	}
	for _, l := range []struct {
		name string
		as   []addressJSON
	}{{"To", o.To}, {"Cc", o.Cc}, {"Bcc", o.Bcc}, {"Reply-To", o.ReplyTo}} {
		if len(l.as) > 0 {
			fmt.Fprintf(b, "%s: %s\n", l.name, addressesText(l.as))
		}
	}
	if len(o.Recipients) > 1 {
		rs := make([]string, len(o.Recipients))
		for i, r := range o.Recipients {
			rs[i] = r.Email + " " + r.DeliveryStatus
		}
		fmt.Fprintf(b, "Recipients: %s\n", strings.Join(rs, ", "))
	}
	if o.AddressesCut {
		b.WriteString("(Some address lists are cut here; get_message shows them all.)\n")
	}
	if o.MetadataCut {
		b.WriteString("(This message's metadata is cut here to fit; the REST API shows it whole.)\n")
	}
	fmt.Fprintf(b, "Subject: %s\n", o.Subject)
	for _, a := range o.Attachments {
		name := "(no filename)"
		if a.Filename != nil {
			name = *a.Filename
		}
		id := "(not stored yet)"
		if a.ID != nil {
			id = *a.ID
		}
		fmt.Fprintf(b, "Attachment %s: %s (%s, %d bytes, %s", id, name, a.ContentType, a.Bytes, a.Disposition)
		if !a.Downloadable {
			b.WriteString(", not downloadable")
		}
		b.WriteString(")\n")
	}
}

// more is the line that says how a list goes on.
func more(hasMore bool, next *string, tool string) string {
	if !hasMore || next == nil {
		return "This is the end of the list.\n"
	}
	return fmt.Sprintf("More follow: call %s again with cursor %q.\n", tool, *next)
}
