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
