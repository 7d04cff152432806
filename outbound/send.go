package outbound

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
	"github.com/inboxd/inboxd/thread"
)

// Modes of --outbound: where mail to addresses outside the gateway goes.
const (
	ModeCapture = "capture"
	ModeRelay   = "relay"
)

// InvalidError is a client mistake in a send, naming the field.
type InvalidError struct {
	Field   string
	Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrTooLarge is a composed message above the size limit.
var ErrTooLarge = errors.New("message exceeds the maximum size")

// Request is a send as a client asks for it (SPEC §6).
type Request struct {
	ProjectID        string
	Inbox            store.Inbox
	To, Cc, Bcc      []message.Address
	ReplyTo          []message.Address
	Subject          *string
	Text, HTML       string
	Attachments      []Attachment
	ReplyToMessageID string
	Headers          map[string]string
}

// Config configures the send path.
type Config struct {
	Mode            string // capture or relay
	MaxRecipients   int
	MaxMessageBytes int64
	Now             func() time.Time

	// RelayRewritesMessageIDs is set when the relay replaces our
	// Message-IDs (--relay-message-id-pattern): a relayed send's id is then
	// final only once the relay answers. Otherwise the id the gateway
	// generated is final when the send is stored (SPEC §4).
	RelayRewritesMessageIDs bool
}

// Service validates, composes and stores sends.
type Service struct {
	db  *store.DB
	cfg Config
}

// NewService returns the send path.
func NewService(db *store.DB, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeCapture
	}
	if cfg.MaxRecipients == 0 {
		cfg.MaxRecipients = 100 // as for SMTP
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = 25 << 20
	}
	return &Service{db: db, cfg: cfg}
}

// allowedHeaders may be set through "headers" besides X-* (SPEC §6).
var allowedHeaders = []string{"List-Unsubscribe", "List-Unsubscribe-Post", "Auto-Submitted", "Precedence", "Keywords"}

// ValidAddress reports whether s is a usable mailbox address: one @, a
// non-empty local part (UTF-8 allowed, RFC 6532) and a domain, with no
// whitespace, brackets or control characters.
func ValidAddress(s string) bool {
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || len(s) > 254 || !utf8.ValidString(s) {
		return false
	}
	if strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune("<>()[],;:\\\"", r)
	}) {
		return false
	}
	domain := s[at+1:]
	return !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".") && !strings.Contains(domain, "..")
}

func hasLineBreak(s string) bool { return strings.ContainsAny(s, "\r\n") }

// hasControl reports a C0 control character or DEL other than HTAB, which
// RFC 5322 §3.2.2 allows as white space in a header body: CR and LF would
// end the header, and the rest are not text (§2.2) and reach receivers
// who mishandle them.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f })
}

func validateAddresses(field string, as []message.Address) error {
	for i, a := range as {
		if !ValidAddress(a.Email) {
			return invalid(fmt.Sprintf("%s[%d].email", field, i), "%q is not a valid email address", a.Email)
		}
		if hasLineBreak(a.Name) {
			return invalid(fmt.Sprintf("%s[%d].name", field, i), "must not contain line breaks")
		}
	}
	return nil
}

// Prepared is a validated, composed send ready for store.Send.
type Prepared struct {
	Out  store.Outgoing
	Hold bool
}

// Prepare validates a request, fills in reply defaults, composes the
// message and decides every recipient's route and whether the inbox's send
// policy holds it.
func (s *Service) Prepare(ctx context.Context, r Request) (Prepared, error) {
	ib := r.Inbox
	var subject string
	var inReplyTo string
	var refs []string
	if r.ReplyToMessageID != "" {
		parent, err := s.db.GetMessage(ctx, ib.ID, r.ReplyToMessageID)
		if err == nil && parent.Deleted {
			err = store.ErrNotFound
		}
		if err != nil {
			// Another inbox's message is not found, like a missing one.
			return Prepared{}, fmt.Errorf("reply_to_message_id: %w", err)
		}
		inReplyTo = strings.Trim(parent.RFCMessageID, "<>")
		refs = ReplyReferences(thread.ExtractIDs(parent.References), inReplyTo)
		subject = ReplySubject(parent.Subject)
		if len(r.To)+len(r.Cc)+len(r.Bcc) == 0 {
			r.To, r.Cc = defaultRecipients(parent)
		}
	}
	if r.Subject != nil {
		subject = *r.Subject
	}
	if hasLineBreak(subject) {
		return Prepared{}, invalid("subject", "must not contain line breaks")
	}
	n := len(r.To) + len(r.Cc) + len(r.Bcc)
	if n == 0 {
		return Prepared{}, invalid("to", "at least one recipient (to, cc or bcc) is required")
	}
	if n > s.cfg.MaxRecipients {
		return Prepared{}, invalid("to", "at most %d recipients per message, got %d", s.cfg.MaxRecipients, n)
	}
	for _, l := range []struct {
		field string
		as    []message.Address
	}{{"to", r.To}, {"cc", r.Cc}, {"bcc", r.Bcc}, {"reply_to", r.ReplyTo}} {
		if err := validateAddresses(l.field, l.as); err != nil {
			return Prepared{}, err
		}
	}
	for k, v := range r.Headers {
		if !strings.HasPrefix(strings.ToLower(k), "x-") && !slices.ContainsFunc(allowedHeaders, func(h string) bool { return strings.EqualFold(h, k) }) {
			return Prepared{}, invalid("headers."+k, "header %q cannot be set; only X-* and %s are allowed", k, strings.Join(allowedHeaders, ", "))
		}
		if k == "" || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == ':' }) {
			return Prepared{}, invalid("headers", "%q is not a valid header name", k)
		}
		if hasControl(v) {
			return Prepared{}, invalid("headers."+k, "header values must not contain control characters (line breaks, NUL, …); only tab is allowed")
		}
	}
	for i, a := range r.Attachments {
		if a.Filename == "" || hasLineBreak(a.Filename) {
			return Prepared{}, invalid(fmt.Sprintf("attachments[%d].filename", i), "a filename without line breaks is required")
		}
		if hasLineBreak(a.ContentType) {
			return Prepared{}, invalid(fmt.Sprintf("attachments[%d].content_type", i), "must not contain line breaks")
		}
		if r.Attachments[i].ContentType == "" {
			r.Attachments[i].ContentType = "application/octet-stream"
		}
	}

	_, domain, _ := strings.Cut(ib.Address, "@")
	raw, err := Compose(Draft{
		From: message.Address{Email: ib.Address, Name: ib.DisplayName}, To: r.To, Cc: r.Cc, ReplyTo: r.ReplyTo,
		Subject: subject, Text: r.Text, HTML: r.HTML, Attachments: r.Attachments, Headers: r.Headers,
		MessageID: NewMessageID(domain), InReplyTo: inReplyTo, References: refs, Date: s.cfg.Now(),
	})
	if err != nil {
		return Prepared{}, err
	}
	if int64(len(raw)) > s.cfg.MaxMessageBytes {
		return Prepared{}, ErrTooLarge
	}

	var rcpts []store.Recipient
	for _, l := range []struct {
		typ string
		as  []message.Address
	}{{"to", r.To}, {"cc", r.Cc}, {"bcc", r.Bcc}} {
		for _, a := range l.as {
			rcpts = append(rcpts, store.Recipient{Email: a.Email, Type: l.typ})
		}
	}
	out := store.Outgoing{InboxID: ib.ID, Raw: raw, ParentID: r.ReplyToMessageID, Bcc: r.Bcc}
	hold, err := s.plan(ctx, ib, &out, rcpts)
	return Prepared{Out: out, Hold: hold}, err
}

// plan routes every recipient (local inbox, capture or relay), decides
// whether the Message-ID is final at once (no relay that rewrites it), and whether
// the inbox's send policy holds the send for approval (SPEC §7).
func (s *Service) plan(ctx context.Context, ib store.Inbox, out *store.Outgoing, rcpts []store.Recipient) (hold bool, err error) {
	out.Confirmed = true
	external := false
	for _, r := range rcpts {
		if r.Route, err = s.route(ctx, ib, r.Email); err != nil {
			return false, err
		}
		if r.Route != "local" {
			_, d, _ := strings.Cut(strings.ToLower(r.Email), "@")
			external = external || !slices.Contains(ib.AllowedDomains, d)
		}
		if r.Route == "relay" && s.cfg.RelayRewritesMessageIDs {
			out.Confirmed = false // final once the relay answers (SPEC §4)
		}
		out.Recipients = append(out.Recipients, r)
	}
	return ib.SendPolicy == "approve_all" || (ib.SendPolicy == "approve_external" && external), nil
}

// route decides where one recipient's copy goes.
func (s *Service) route(ctx context.Context, ib store.Inbox, email string) (string, error) {
	_, _, err := s.db.LookupRecipient(ctx, email)
	switch {
	case err == nil:
		return "local", nil
	case !errors.Is(err, store.ErrNotFound):
		return "", err
	case ib.Environment == "test" || s.cfg.Mode != ModeRelay:
		return "capture", nil
	}
	return "relay", nil
}

// defaultRecipients answers the parent's sender (inbound) or repeats its
// recipients (outbound).
func defaultRecipients(parent store.Message) (to, cc []message.Address) {
	conv := func(as []store.Address) []message.Address {
		out := make([]message.Address, 0, len(as))
		for _, a := range as {
			m := message.Address{Email: a.Email}
			if a.Name != nil {
				m.Name = *a.Name
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
// may send from; it is the SMTP reply itself (a client fault).
var ErrSenderNotAllowed = &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 7, 1},
	Message: "From is not an inbox this key may send from"}

// Submit sends a message that an SMTP client submitted with an API key
// (SPEC §2, "AUTH … used for submission"): the same send path as the API
// (routes, approval gate, durable queue), with the client's bytes. Its From
// must be an inbox of the key's grant. The envelope recipients are the
// recipients; a missing Message-ID is added and the Bcc: fields removed.
func (s *Service) Submit(ctx context.Context, key store.Key, rcpts []string, raw []byte) (store.SendResult, error) {
	raw = message.WithoutBcc(raw)
	p := message.Parse(raw)
	if p.From == nil {
		return store.SendResult{}, ErrSenderNotAllowed
	}
	ib, err := s.db.InboxByAddress(ctx, p.From.Email)
	if errors.Is(err, store.ErrNotFound) || err == nil && (ib.ProjectID != key.ProjectID || key.InboxIDs != nil && !slices.Contains(key.InboxIDs, ib.ID)) {
		return store.SendResult{}, ErrSenderNotAllowed
	}
	if err != nil {
		return store.SendResult{}, err
	}
	if thread.OwnID(p.MessageID) == "" {
		_, domain, _ := strings.Cut(ib.Address, "@")
		raw = append([]byte("Message-ID: <"+NewMessageID(domain)+">\r\n"), raw...)
	}
	inHeaders := map[string]string{}
	for _, a := range p.To {
		inHeaders[strings.ToLower(a.Email)] = "to"
	}
	for _, a := range p.Cc {
		if _, ok := inHeaders[strings.ToLower(a.Email)]; !ok {
			inHeaders[strings.ToLower(a.Email)] = "cc"
		}
	}
	out := store.Outgoing{InboxID: ib.ID, Raw: raw}
	var list []store.Recipient
	for _, rcpt := range rcpts {
		typ, ok := inHeaders[strings.ToLower(rcpt)]
		if !ok {
			typ = "bcc"
			out.Bcc = append(out.Bcc, message.Address{Email: rcpt})
		}
		list = append(list, store.Recipient{Email: rcpt, Type: typ})
	}
	hold, err := s.plan(ctx, ib, &out, list)
	if err != nil {
		return store.SendResult{}, err
	}
	return s.db.Send(ctx, store.SendRequest{ProjectID: key.ProjectID, Out: out, Hold: hold,
		Answer: func(store.SendResult) (int, []byte, error) { return 250, nil, nil }})
}
