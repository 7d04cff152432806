package app

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
)

// What the web console needs to show a message's HTML in a sandboxed frame
// (SPEC §12). The frame's document has an opaque origin, so the requests
// it makes for its inline (cid:) images carry no SameSite=Strict cookie:
// they are authorized by a short-lived token, signed here, that names one
// message and the key that opened it, and is good for nothing else.

// InlineTTL is how long an inline-image token is good for: a frame is
// loaded, and its images fetched, right after the token is made.
const InlineTTL = 15 * time.Minute

type inlinePayload struct {
	Project string `json:"p"`
	Inbox   string `json:"i"`
	Message string `json:"m"`
	Key     string `json:"k"`
	Expires int64  `json:"e"`
}

// inlineMAC signs an inline token with a key of its own, derived from the
// cursor secret, so that no cursor is ever a token and no token a cursor.
func (a *App) inlineMAC(body []byte) []byte {
	k := hmac.New(sha256.New, a.secret)
	k.Write([]byte("inboxd inline image token"))
	h := hmac.New(sha256.New, k.Sum(nil))
	h.Write(body)
	return h.Sum(nil)
}

// InlineToken signs a token for the inline parts of a body the caller has
// opened (MessageBody checked its scope and grant): InlineAttachment
// serves them with it, for InlineTTL, as long as the caller's key holds.
// It is a URL path segment.
func (a *App) InlineToken(c Caller, b Body) string {
	body, _ := json.Marshal(inlinePayload{Project: c.ProjectID, Inbox: b.Inbox.ID, Message: b.Message.ID, Key: c.ID,
		Expires: a.now().Add(InlineTTL).Unix()})
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(a.inlineMAC(body))
}

// InlineAttachment is an inline part (one with a Content-ID) of the message
// a token names, decoded, checked as Attachment checks it for the key that
// made the token: that key must still exist, with its scope and grant. A
// token that is tampered with, expired, or of a revoked key is not found.
func (a *App) InlineAttachment(ctx context.Context, token, attachmentID string) (store.Attachment, Stream, error) {
	b64body, b64mac, _ := strings.Cut(token, ".")
	body, err1 := base64.RawURLEncoding.DecodeString(b64body)
	mac, err2 := base64.RawURLEncoding.DecodeString(b64mac)
	var p inlinePayload
	if err1 != nil || err2 != nil || !hmac.Equal(mac, a.inlineMAC(body)) || json.Unmarshal(body, &p) != nil || a.now().Unix() >= p.Expires {
		return store.Attachment{}, nil, ErrNotFound
	}
	k, err := a.db.GetKey(ctx, p.Project, p.Key)
	if errors.Is(err, store.ErrNotFound) {
		return store.Attachment{}, nil, ErrNotFound
	}
	if err != nil {
		return store.Attachment{}, nil, err
	}
	at, stream, err := a.Attachment(ctx, Caller{Key: k}, p.Inbox, p.Message, attachmentID)
	if err == nil && at.ContentID == "" {
		return store.Attachment{}, nil, ErrNotFound
	}
	return at, stream, err
}

// OriginalHTML is the HTML body of a message of the caller's grant as it
// was received, before sanitizing (message.OriginalHTML): the stored HTML
// has lost its remote images, the raw message has them, for a reader who
// asks to load them (SPEC §12). It takes messages:read, as the body does;
// ok is false when the message has no HTML part or no raw message stored.
// A surface must sanitize it (message.SanitizeFrameTo) before it shows it.
func (a *App) OriginalHTML(ctx context.Context, c Caller, inboxID, messageID string) (html string, ok bool, err error) {
	if err := c.Need("messages:read"); err != nil {
		return "", false, err
	}
	_, m, err := a.message(ctx, c, inboxID, messageID)
	if err != nil || !m.RawStored {
		return "", false, err
	}
	var raw bytes.Buffer
	if err := a.db.WriteRaw(ctx, &raw, m.ID); err != nil {
		return "", false, err
	}
	html, ok = message.OriginalHTML(&raw)
	return html, ok, nil
}
