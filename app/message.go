package app

import (
	"context"

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
