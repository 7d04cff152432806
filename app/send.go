package app

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"slices"
	"strings"
	"sync"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/thread"
)

// Where mail to addresses outside the gateway goes (--outbound).
const (
	OutboundCapture = "capture"
	OutboundRelay   = "relay"
	OutboundDirect  = "direct" // each domain's MX; its deliveries are on the "relay" route too
)

// Results of a send (SPEC §6).
const (
	SendQueued           = "queued"
	SendApprovalRequired = "approval_required"
)

// SendInput is a send as a client asks for it (SPEC §6).
type SendInput struct {
	To               []AddressInput    `json:"to"`
	Cc               []AddressInput    `json:"cc"`
	Bcc              []AddressInput    `json:"bcc"`
	ReplyTo          []AddressInput    `json:"reply_to"`
	Subject          *string           `json:"subject"`
	Text             string            `json:"text"`
	HTML             string            `json:"html"`
	Attachments      []AttachmentInput `json:"attachments"`
	ReplyToMessageID string            `json:"reply_to_message_id"`
	Headers          map[string]string `json:"headers"`
}

// Idempotency makes a send replayable (SPEC §6): the same Key with the
// same request answers what the first request did and sends nothing.
type Idempotency struct {
	Key string
	// Param is how the surface names the key in errors
	// ("Idempotency-Key", "idempotency_key").
	Param string
	// Op names what is asked (the route's path, the tool), and Request
	// reads the request's JSON: with the inbox they identify it, the JSON
	// compared canonically (key order and whitespace do not matter).
	// Request is called after the scope and grant checks.
	Op      string
	Request func() ([]byte, error)
}

// SendResult is what a send did: a message queued, or a draft held for
// approval (Result says which). Replayed: an idempotency key's first
// request did it, and nothing was sent now.
type SendResult struct {
	Result                       string
	MessageID, ThreadID, InboxID string
	DraftID, ApprovalID          string
	Replayed                     bool
}

func sendResult(r store.SendResult) SendResult {
	out := SendResult{Result: SendQueued, MessageID: r.MessageID, ThreadID: r.ThreadID, InboxID: r.InboxID,
		DraftID: r.DraftID, ApprovalID: r.ApprovalID, Replayed: r.Replayed}
	if r.ApprovalID != "" {
		out.Result = SendApprovalRequired
	}
	return out
}

// allowedHeaders may be set through "headers" besides X-* (SPEC §6).
var allowedHeaders = []string{"List-Unsubscribe", "List-Unsubscribe-Post", "Auto-Submitted", "Precedence", "Keywords"}

// maxHeaderName bounds a settable header's name. RFC 5322 sets no limit
// but the line's; this one leaves the value room on the name's line, as
// folding needs (go-message cannot fold a value after a name of 74).
const maxHeaderName = 64

// settableHeader reports whether a send's "headers" may set the header.
func settableHeader(k string) bool {
	return len(k) > 2 && strings.EqualFold(k[:2], "x-") || slices.ContainsFunc(allowedHeaders, func(h string) bool { return strings.EqualFold(h, k) })
}

// structuredHeader reports a settable header whose value has a syntax of
// its own, where RFC 2047 words cannot stand: all but X-* and Keywords.
func structuredHeader(k string) bool {
	return !strings.HasPrefix(strings.ToLower(k), "x-") && !strings.EqualFold(k, "Keywords")
}

// errMessageTooLarge is a composed send above the size limit.
var errMessageTooLarge = &Error{Code: EPayloadTooLarge, Message: "Request body is too large."}

// Send sends a message from an inbox of the caller's grant (SPEC §6): it
// validates the input, fills in a reply's defaults, composes the message
// once (From is the inbox), routes every recipient, holds it when the
// inbox's send policy says so (SPEC §7) and stores it with its deliveries
// before it answers. With idem, a repeat of the same request answers the
// stored result instead.
func (a *App) Send(ctx context.Context, c Caller, inboxID string, idem *Idempotency, decode Decoder) (SendResult, error) {
	if err := c.Need("messages:send"); err != nil {
		return SendResult{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return SendResult{}, err
	}
	var key *store.Idempotency
	if idem != nil {
		if key, err = a.idempotency(ib, idem); err != nil {
			return SendResult{}, err
		}
		flight := c.ProjectID + "\x00" + idem.Key
		if !a.flight.begin(flight) {
			return SendResult{}, Errorf(ETemporarilyUnavailable, "A matching send is already in progress.")
		}
		defer a.flight.end(flight)
		// A repeat answers as the first send did, before the request is
		// validated again: what made it valid may be gone (SPEC §6).
		if res, err := a.db.Replay(ctx, c.ProjectID, *key); !errors.Is(err, store.ErrNotFound) {
			return sendOutcome(res, err, idem)
		}
	}
	var in SendInput
	if err := decode(&in); err != nil {
		return SendResult{}, err
	}
	out, hold, err := a.compose(ctx, ib, in)
	if err != nil {
		return SendResult{}, err
	}
	res, err := a.db.Send(ctx, store.SendRequest{ProjectID: c.ProjectID, Idempotency: key, Out: out, Hold: hold})
	return sendOutcome(res, err, idem)
}

// sendOutcome is the answer to a send that got res and err from the store.
func sendOutcome(res store.SendResult, err error, idem *Idempotency) (SendResult, error) {
	switch {
	case errors.Is(err, store.ErrIdempotencyConflict):
		return SendResult{}, &Error{Code: EIdempotencyConflict, Message: "This " + idem.Param + " was used with a different request.", Param: idem.Param}
	case errors.Is(err, store.ErrIdempotencyExpired):
		return SendResult{}, &Error{Code: EIdempotencyExpired, Message: "This " + idem.Param + " is older than 30 days; use a new key.", Param: idem.Param}
	case err != nil:
		return SendResult{}, err
	}
	return sendResult(res), nil
}

// idempotency checks a key and identifies its request.
func (a *App) idempotency(ib store.Inbox, idem *Idempotency) (*store.Idempotency, error) {
	if !validIdempotencyKey(idem.Key) {
		return nil, Invalidf(idem.Param, "%s must be 1–256 characters of A-Z a-z 0-9 - . _ ~ :", idem.Param)
	}
	req, err := idem.Request()
	if err != nil {
		return nil, err
	}
	// Canonical JSON: key order and whitespace do not matter.
	var v any
	if json.Unmarshal(req, &v) == nil {
		req, _ = json.Marshal(v)
	}
	h := sha256.New()
	h.Write([]byte(ib.ID + "\x00" + idem.Op + "\x00"))
	h.Write(req)
	return &store.Idempotency{Key: idem.Key, Hash: h.Sum(nil)}, nil
}

// inFlight tracks Idempotency-Keys whose first request is still running
// (SPEC §6: a second request meanwhile answers 503).
type inFlight struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (f *inFlight) begin(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys[key] {
		return false
	}
	f.keys[key] = true
	return true
}

func (f *inFlight) end(key string) {
	f.mu.Lock()
	delete(f.keys, key)
	f.mu.Unlock()
}

func validIdempotencyKey(k string) bool {
	if len(k) < 1 || len(k) > 256 {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~:", r)) {
			return false
		}
	}
	return true
}

// compose validates a send, fills in reply defaults, composes the message
// and plans its recipients.
func (a *App) compose(ctx context.Context, ib store.Inbox, in SendInput) (store.Outgoing, bool, error) {
	files, err := Files(in.Attachments)
	if err != nil {
		return store.Outgoing{}, false, err
	}
	to, cc, bcc := AddressesOf(in.To), AddressesOf(in.Cc), AddressesOf(in.Bcc)
	var subject, inReplyTo string
	var refs []string
	if in.ReplyToMessageID != "" {
		parent, err := a.db.GetMessage(ctx, ib.ID, in.ReplyToMessageID)
		if err == nil && parent.Deleted {
			err = store.ErrNotFound
		}
		if errors.Is(err, store.ErrNotFound) {
			// Another inbox's message is not found, like a missing one;
			// either way the answer names what was not found.
			return store.Outgoing{}, false, &Error{Code: ENotFound, Message: ErrNotFound.Message, Param: "reply_to_message_id"}
		}
		if err != nil {
			return store.Outgoing{}, false, fmt.Errorf("reply_to_message_id: %w", err)
		}
		if !parent.RFCMessageIDGenerated {
			// A generated id is the gateway's own (SPEC §3): the
			// recipient never saw it, so there is no parent to name.
			inReplyTo = strings.Trim(parent.RFCMessageID, "<>")
		}
		refs = thread.ReplyReferences(thread.ExtractIDs(parent.References), thread.ExtractIDs(parent.InReplyTo), inReplyTo)
		// What the parent's sender wrote is made fit for a header, not
		// refused: the caller did not write it and cannot fix it.
		subject = oneLine(thread.ReplySubject(parent.Subject))
		if len(to)+len(cc)+len(bcc) == 0 {
			to, cc = defaultRecipients(parent)
			for _, addr := range slices.Concat(to, cc) {
				if !message.ValidAddress(addr.Email) {
					// Not quoted: the text is the sender's, and an agent
					// reads this message.
					return store.Outgoing{}, false, invalid("to", "the message answered has no valid address to reply to; give to")
				}
			}
		}
	}
	if in.Subject != nil {
		subject = *in.Subject
	}
	if hasControl(subject) {
		return store.Outgoing{}, false, invalid("subject", noControl)
	}
	n := len(to) + len(cc) + len(bcc)
	if n == 0 {
		return store.Outgoing{}, false, invalid("to", "at least one recipient (to, cc or bcc) is required")
	}
	if n > a.send.MaxRecipients {
		return store.Outgoing{}, false, invalid("to", "at most %d recipients per message, got %d", a.send.MaxRecipients, n)
	}
	for _, l := range []struct {
		field string
		as    []message.Address
	}{{"to", to}, {"cc", cc}, {"bcc", bcc}, {"reply_to", AddressesOf(in.ReplyTo)}} {
		if err := validateAddresses(l.field, l.as); err != nil {
			return store.Outgoing{}, false, err
		}
	}
	seen := map[string]string{} // header names as given, by their canonical form
	for _, k := range slices.Sorted(maps.Keys(in.Headers)) {
		v := in.Headers[k]
		if first, ok := seen[textproto.CanonicalMIMEHeaderKey(k)]; ok {
			return store.Outgoing{}, false, invalid("headers."+k, "header %q is given twice, as %q too (header names are not case-sensitive)", k, first)
		}
		seen[textproto.CanonicalMIMEHeaderKey(k)] = k
		if !settableHeader(k) {
			return store.Outgoing{}, false, invalid("headers."+k, "header %q cannot be set; only X-* and %s are allowed", k, strings.Join(allowedHeaders, ", "))
		}
		if k == "" || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == ':' }) {
			return store.Outgoing{}, false, invalid("headers", "%q is not a valid header name", k)
		}
		if len(k) > maxHeaderName {
			return store.Outgoing{}, false, invalid("headers."+k, "a header name is at most %d characters", maxHeaderName)
		}
		if hasControl(v) {
			return store.Outgoing{}, false, invalid("headers."+k, "header values "+noControl)
		}
		if structuredHeader(k) && strings.ContainsFunc(v, func(r rune) bool { return r >= 0x80 }) {
			return store.Outgoing{}, false, invalid("headers."+k, "%s must be ASCII (percent-encode a URI beyond ASCII)", k)
		}
	}
	for i, at := range in.Attachments {
		if at.Filename == "" {
			return store.Outgoing{}, false, invalid(fmt.Sprintf("attachments[%d].filename", i), "a filename is required")
		}
		if hasControl(at.Filename) {
			return store.Outgoing{}, false, invalid(fmt.Sprintf("attachments[%d].filename", i), noControl)
		}
	}

	raw, err := message.Compose(message.Draft{
		From: message.Address{Email: ib.Address, Name: ib.DisplayName}, To: to, Cc: cc, ReplyTo: AddressesOf(in.ReplyTo),
		Subject: subject, Text: in.Text, HTML: in.HTML, Attachments: files, Headers: in.Headers,
		MessageID: message.NewMessageID(domainOf(ib.Address)), InReplyTo: inReplyTo, References: refs, Date: a.now(),
	})
	if err != nil {
		return store.Outgoing{}, false, err
	}
	if int64(len(raw)) > a.send.MaxMessageBytes {
		return store.Outgoing{}, false, errMessageTooLarge
	}
	var rcpts []store.Recipient
	named := map[string]bool{}
	for _, l := range []struct {
		typ string
		as  []message.Address
	}{{"to", to}, {"cc", cc}, {"bcc", bcc}} {
		for _, addr := range l.as {
			// One copy per mailbox, however often it is named: the first
			// mention decides its type. Mail systems compare addresses
			// without case in practice, as the recipient lookup does.
			if k := strings.ToLower(addr.Email); !named[k] {
				named[k] = true
				rcpts = append(rcpts, store.Recipient{Email: addr.Email, Type: l.typ})
			}
		}
	}
	out := store.Outgoing{InboxID: ib.ID, Raw: raw, ParentID: in.ReplyToMessageID, Bcc: bcc}
	hold, err := a.plan(ctx, ib, &out, rcpts)
	return out, hold, err
}

// invalid is a send's input error, naming the field, in the words the
// send route has always used ("to: at least one recipient …").
func invalid(field, format string, args ...any) error {
	return Invalidf(field, "%s: %s.", field, fmt.Sprintf(format, args...))
}

// noControl is the answer to a control character in what becomes a
// header: a subject, a display name, a filename, a header value.
const noControl = "must not contain control characters (line breaks, NUL, …); only tab is allowed"

// hasControl reports a C0 control character or DEL other than HTAB, which
// RFC 5322 §3.2.2 allows as white space in a header body: CR and LF would
// end the header, and the rest are not text (§2.2) and reach receivers
// who mishandle them.
func hasControl(s string) bool { return strings.ContainsFunc(s, isControl) }

func isControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// oneLine replaces the control characters hasControl finds with spaces.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
}

func validateAddresses(field string, as []message.Address) error {
	for i, addr := range as {
		if !message.ValidAddress(addr.Email) {
			return invalid(fmt.Sprintf("%s[%d].email", field, i), "%q is not a valid email address", addr.Email)
		}
		if hasControl(addr.Name) {
			return invalid(fmt.Sprintf("%s[%d].name", field, i), noControl)
		}
	}
	return nil
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return "localhost"
}

// plan routes every recipient (local inbox, capture or relay), decides
// whether the Message-ID is final at once (no relay that rewrites it), and
// whether the inbox's send policy holds the send for approval (SPEC §7).
func (a *App) plan(ctx context.Context, ib store.Inbox, out *store.Outgoing, rcpts []store.Recipient) (hold bool, err error) {
	out.Confirmed = true
	external := false
	for _, r := range rcpts {
		if r.Route, err = a.route(ctx, ib, r.Email); err != nil {
			return false, err
		}
		if r.Route != "local" {
			_, d, _ := strings.Cut(strings.ToLower(r.Email), "@")
			// EqualFold: inboxes made before allowed_domains were lowercased.
			external = external || !slices.ContainsFunc(ib.AllowedDomains, func(a string) bool { return strings.EqualFold(a, d) })
		}
		if r.Route == "relay" && a.send.RelayRewritesMessageIDs {
			out.Confirmed = false // final once the relay answers (SPEC §4)
		}
		out.Recipients = append(out.Recipients, r)
	}
	return ib.SendPolicy == "approve_all" || (ib.SendPolicy == "approve_external" && external), nil
}

// route decides where one recipient's copy goes.
func (a *App) route(ctx context.Context, ib store.Inbox, email string) (string, error) {
	_, err := a.db.LookupRecipient(ctx, email)
	switch {
	case err == nil:
		return "local", nil
	case !errors.Is(err, store.ErrNotFound):
		return "", err
	case ib.Environment == "test" || a.send.Outbound == OutboundCapture:
		return "capture", nil
	}
	// The worker's transport hands it to the relay or, under direct, to
	// the recipient domain's MX: either way it leaves the gateway.
	return "relay", nil
}

// defaultRecipients answers the parent's sender (inbound) or repeats its
// recipients (outbound).
func defaultRecipients(parent store.Message) (to, cc []message.Address) {
	conv := func(as []store.Address) []message.Address {
		out := make([]message.Address, 0, len(as))
		for _, addr := range as {
			m := message.Address{Email: addr.Email}
			if addr.Name != nil {
				m.Name = oneLine(*addr.Name)
			}
			out = append(out, m)
		}
		return out
	}
	if parent.Direction == "outbound" {
		return conv(parent.To), conv(parent.Cc)
	}
	if len(parent.ReplyTo) > 0 {
		return conv(parent.ReplyTo), nil
	}
	if parent.From != nil {
		return conv([]store.Address{*parent.From}), nil
	}
	return nil, nil
}

// ErrSenderNotAllowed is a submission whose From is not an inbox the key
// may send from (a client fault; SMTP answers 550 5.7.1).
var ErrSenderNotAllowed = errors.New("From is not an inbox this key may send from")

// Submit sends a message that an SMTP client submitted with an API key
// (SPEC §2, "AUTH … used for submission"): the same send path as Send
// (routes, approval gate, durable queue), with the client's bytes, parsed
// once here. Its From must be an inbox of the key's grant. The envelope
// recipients are the recipients; a missing Message-ID is added and the
// Bcc: fields removed.
func (a *App) Submit(ctx context.Context, c Caller, rcpts []string, raw []byte) error {
	if !c.Has("messages:send") {
		return ErrSenderNotAllowed
	}
	raw = message.WithoutBcc(raw)
	p := message.Parse(raw)
	if p.From == nil {
		return ErrSenderNotAllowed
	}
	ib, err := a.db.InboxByAddress(ctx, p.From.Email)
	if errors.Is(err, store.ErrNotFound) || err == nil && (ib.ProjectID != c.ProjectID || !c.CanSee(ib.ID)) {
		return ErrSenderNotAllowed
	}
	if err != nil {
		return err
	}
	if thread.OwnID(p.MessageID) == "" {
		id := message.NewMessageID(domainOf(ib.Address))
		raw = append([]byte("Message-ID: <"+id+">\r\n"), raw...)
		p.MessageID = append([]string{"<" + id + ">"}, p.MessageID...) // as Parse would read it
	}
	inHeaders := map[string]string{}
	for _, addr := range p.To {
		inHeaders[strings.ToLower(addr.Email)] = "to"
	}
	for _, addr := range p.Cc {
		if _, ok := inHeaders[strings.ToLower(addr.Email)]; !ok {
			inHeaders[strings.ToLower(addr.Email)] = "cc"
		}
	}
	out := store.Outgoing{InboxID: ib.ID, Raw: raw, Parsed: p}
	var list []store.Recipient
	for _, rcpt := range rcpts {
		typ, ok := inHeaders[strings.ToLower(rcpt)]
		if !ok {
			typ = "bcc"
			out.Bcc = append(out.Bcc, message.Address{Email: rcpt})
		}
		list = append(list, store.Recipient{Email: rcpt, Type: typ})
	}
	hold, err := a.plan(ctx, ib, &out, list)
	if err != nil {
		return err
	}
	_, err = a.db.Send(ctx, store.SendRequest{ProjectID: c.ProjectID, Out: out, Hold: hold})
	return err
}
