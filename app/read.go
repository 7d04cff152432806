package app

import (
	"context"
	"fmt"
	"io"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
)

// ThreadRead is a page of a thread's messages with their bodies, for a
// surface that shows a conversation whole (MCP's read_thread).
type ThreadRead struct {
	Thread store.Thread
	Messages
	Bodies map[string]store.BodyParts // by message id
}

// ReadThread is ThreadMessages' page, read now (p.Wait is not for it),
// with the thread row (Thread's, so threads:read too) and every
// message's body opened.
func (a *App) ReadThread(ctx context.Context, c Caller, inboxID, threadID string, p ThreadMessagesParams) (ThreadRead, error) {
	p.Wait = ""
	read, err := a.ThreadMessages(c, inboxID, threadID, p)
	if err != nil {
		return ThreadRead{}, err
	}
	page, err := read.Page(ctx)
	if err != nil {
		return ThreadRead{}, err
	}
	t, err := a.Thread(ctx, c, inboxID, threadID) // the thread row is threads:read data
	if err != nil {
		return ThreadRead{}, err
	}
	bodies, err := a.bodies(ctx, page.Rows)
	if err != nil {
		return ThreadRead{}, err
	}
	return ThreadRead{Thread: t, Messages: page, Bodies: bodies}, nil
}

// bodies opens the bodies of messages the caller's operation has let
// through, in one query.
func (a *App) bodies(ctx context.Context, msgs []store.Message) (map[string]store.BodyParts, error) {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return a.db.OpenBodies(ctx, ids)
}

// The forms of a body WriteBodyPart writes.
const (
	BodyText      = "text"      // the text/plain part
	BodyHTML      = "html"      // the text/html part, sanitized
	BodyExtracted = "extracted" // the new text of the message, quoted replies left out
)

// WriteBodyPart writes one form of a body, read from storage as it is
// written; false when the message has no such part. The HTML is sanitized
// as the body route serves it (the policy may have tightened since it was
// stored), its cid: references left as they are. An error of w's ends the
// write and is returned as it is, so a writer that has what it needs may
// stop the copy.
func WriteBodyPart(ctx context.Context, w io.Writer, b store.BodyParts, form string) (bool, error) {
	switch form {
	case BodyExtracted:
		if !HasExtractedText(b) {
			return false, nil
		}
		return true, copyBodyPart(ctx, w, &b.ExtractedText)
	case BodyText:
		if b.Text == nil {
			return false, nil
		}
		return true, copyBodyPart(ctx, w, b.Text)
	case BodyHTML:
		if b.HTML == nil {
			return false, nil
		}
		r := b.HTML.Open(ctx)
		defer r.Close()
		return true, message.SanitizeTo(w, r, nil)
	}
	return false, fmt.Errorf("app: unknown body form %q", form)
}

// HasExtractedText reports whether a body has an extracted text: one is
// derived from its text part, or from its HTML when it has none; a
// message with neither (only attachments, say) has none, as it has no
// text and no html.
func HasExtractedText(b store.BodyParts) bool { return b.Text != nil || b.HTML != nil }

func copyBodyPart(ctx context.Context, w io.Writer, p *store.BodyPart) error {
	r := p.Open(ctx)
	defer r.Close()
	_, err := io.Copy(w, r)
	return err
}
