package app

import (
	"context"
	"io"

	"github.com/inboxd/inboxd/store"
)

// Messages is a page of an inbox's messages with what their objects show
// besides the rows: the inbox (its environment), each message's
// attachments, and the recipients' delivery statuses of outbound ones.
type Messages struct {
	Page[store.Message]
	Inbox       store.Inbox
	Attachments map[string][]store.Attachment     // by message id
	Deliveries  map[string][]store.DeliveryStatus // by message id
}

// MessageView is one message with what its object shows besides the row.
type MessageView struct {
	Inbox       store.Inbox
	Message     store.Message
	Attachments []store.Attachment
	Deliveries  []store.DeliveryStatus
}

// messages is the page of rows fetched with limit+1 (NewPage) with their
// extras; attachments false says none of the page's messages has any.
func (a *App) messages(ctx context.Context, ib store.Inbox, rows []store.Message, limit int, scope CursorScope,
	attachments bool, position func(store.Message) any) (Messages, error) {
	page, err := NewPage(a, rows, limit, scope, position)
	if err != nil {
		return Messages{}, err
	}
	atts, dels, err := a.extras(ctx, page.Rows, attachments)
	if err != nil {
		return Messages{}, err
	}
	return Messages{Page: page, Inbox: ib, Attachments: atts, Deliveries: dels}, nil
}

// extras loads the attachments of messages (unless none of them can have
// any), and the recipients' delivery statuses of their outbound ones, in
// up to two queries.
func (a *App) extras(ctx context.Context, msgs []store.Message, attachments bool) (map[string][]store.Attachment, map[string][]store.DeliveryStatus, error) {
	var ids, out []string
	for _, m := range msgs {
		if attachments {
			ids = append(ids, m.ID)
		}
		if m.Direction == "outbound" {
			out = append(out, m.ID)
		}
	}
	atts, err := a.db.AttachmentsOf(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	dels, err := a.db.DeliveriesOf(ctx, out)
	return atts, dels, err
}

// InboxMessagesParams are the parameters of InboxMessages, as given.
type InboxMessagesParams struct {
	PageParams
	Q         string // search (SPEC §5.5); "" for every message
	Direction string // inbound or outbound; "" for both
}

// InboxMessages is a page of an inbox's messages, newest first, optionally
// only those matching a search or of one direction.
func (a *App) InboxMessages(ctx context.Context, c Caller, inboxID string, p InboxMessagesParams) (Messages, error) {
	if err := c.Need("messages:read"); err != nil {
		return Messages{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return Messages{}, err
	}
	limit, err := p.Size(25)
	if err != nil {
		return Messages{}, err
	}
	q, err := searchQuery(p.Q)
	if err != nil {
		return Messages{}, err
	}
	if p.Direction != "" && p.Direction != "inbound" && p.Direction != "outbound" {
		return Messages{}, Invalidf("direction", "direction must be inbound or outbound.")
	}
	scope := CursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "inbox_messages", Query: q.String(), Extra: p.Direction}
	after, err := Position[store.TimeKey](a, scope, p.Cursor)
	if err != nil {
		return Messages{}, err
	}
	msgs, err := a.db.InboxPage(ctx, ib.ID, q, p.Direction, after, limit+1)
	if err != nil {
		return Messages{}, err
	}
	return a.messages(ctx, ib, msgs, limit, scope, true,
		func(m store.Message) any { return store.TimeKey{At: m.CreatedAt.UnixMilli(), ID: m.ID} })
}

// message loads a message of an inbox of the caller's grant; a deleted
// one is not found.
func (a *App) message(ctx context.Context, c Caller, inboxID, messageID string) (store.Inbox, store.Message, error) {
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return store.Inbox{}, store.Message{}, err
	}
	m, err := a.db.GetMessage(ctx, ib.ID, messageID)
	if err == nil && m.Deleted {
		err = ErrNotFound
	}
	return ib, m, err
}

// Message is one message of an inbox of the caller's grant.
func (a *App) Message(ctx context.Context, c Caller, inboxID, messageID string) (MessageView, error) {
	if err := c.Need("messages:read"); err != nil {
		return MessageView{}, err
	}
	ib, m, err := a.message(ctx, c, inboxID, messageID)
	if err != nil {
		return MessageView{}, err
	}
	atts, dels, err := a.extras(ctx, []store.Message{m}, true)
	if err != nil {
		return MessageView{}, err
	}
	return MessageView{Inbox: ib, Message: m, Attachments: atts[m.ID], Deliveries: dels[m.ID]}, nil
}

// DeleteMessage deletes a message (SPEC §5.3: soft, gone from lists, its
// body and raw not found).
func (a *App) DeleteMessage(ctx context.Context, c Caller, inboxID, messageID string) error {
	if err := c.Need("messages:delete"); err != nil {
		return err
	}
	ib, m, err := a.message(ctx, c, inboxID, messageID)
	if err != nil {
		return err
	}
	return a.db.DeleteMessage(ctx, ib.ID, m.ID)
}

// Body is a message's body, opened for streaming: each part is read from
// storage as it is copied, never held whole.
type Body struct {
	Inbox   store.Inbox
	Message store.Message
	Parts   store.BodyParts
	// Inline maps the Content-ID of each downloadable part to its
	// attachment id (the first part wins a Content-ID used twice), for the
	// cid: references of the HTML; nil when there is no HTML or no such
	// part.
	Inline map[string]string
}

// MessageBody opens the body of a message of the caller's grant.
func (a *App) MessageBody(ctx context.Context, c Caller, inboxID, messageID string) (Body, error) {
	if err := c.Need("messages:read"); err != nil {
		return Body{}, err
	}
	ib, m, err := a.message(ctx, c, inboxID, messageID)
	if err != nil {
		return Body{}, err
	}
	parts, err := a.db.OpenBody(ctx, m.ID)
	if err != nil {
		return Body{}, err
	}
	b := Body{Inbox: ib, Message: m, Parts: parts}
	if parts.HTML != nil {
		atts, err := a.db.Attachments(ctx, m.ID)
		if err != nil {
			return Body{}, err
		}
		for _, at := range atts {
			if _, dup := b.Inline[at.ContentID]; at.ContentID != "" && Downloadable(at) && !dup {
				if b.Inline == nil {
					b.Inline = map[string]string{}
				}
				b.Inline[at.ContentID] = at.ID
			}
		}
	}
	return b, nil
}

// Stream writes content that its operation's checks have let through,
// read from storage as it is written: a surface sets up its answer (its
// headers) knowing that the content follows. An error before the first
// write is an answer like any other; after, the content is cut short.
type Stream func(w io.Writer) error

// RawMessage is the original message as received, of a message of the
// caller's grant.
func (a *App) RawMessage(ctx context.Context, c Caller, inboxID, messageID string) (store.Message, Stream, error) {
	if err := c.Need("messages:raw"); err != nil {
		return store.Message{}, nil, err
	}
	_, m, err := a.message(ctx, c, inboxID, messageID)
	if err != nil {
		return store.Message{}, nil, err
	}
	return m, func(w io.Writer) error { return a.db.WriteRaw(ctx, w, m.ID) }, nil
}

// Downloadable reports whether an attachment may be fetched: only what
// the scan found clean (SPEC §5.3).
func Downloadable(at store.Attachment) bool { return at.ScanStatus == "clean" }

// Attachment is a downloadable attachment of a message of the caller's
// grant, decoded; any other is permission_denied.
func (a *App) Attachment(ctx context.Context, c Caller, inboxID, messageID, attachmentID string) (store.Attachment, Stream, error) {
	if err := c.Need("messages:read"); err != nil {
		return store.Attachment{}, nil, err
	}
	_, m, err := a.message(ctx, c, inboxID, messageID)
	if err != nil {
		return store.Attachment{}, nil, err
	}
	at, err := a.db.AttachmentOf(ctx, m.ID, attachmentID)
	if err != nil {
		return store.Attachment{}, nil, err
	}
	if !Downloadable(at) {
		return store.Attachment{}, nil, Errorf(EPermissionDenied, "This attachment is not downloadable (scan_status %s).", at.ScanStatus)
	}
	return at, func(w io.Writer) error { return a.db.WriteAttachment(ctx, w, at.ID) }, nil
}
