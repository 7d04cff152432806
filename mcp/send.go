package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/inboxd/inboxd/app"
)

// The send tools call app.Send, the operation of the REST send route
// (SPEC §6): the same checks, composition, routes, approval gate and
// idempotency.

// sendFields are the arguments both send tools take: SPEC §6's send.
type sendFields struct {
	To             []app.AddressInput    `json:"to,omitempty" jsonschema:"recipients"`
	Cc             []app.AddressInput    `json:"cc,omitempty" jsonschema:"copy recipients"`
	Bcc            []app.AddressInput    `json:"bcc,omitempty" jsonschema:"blind copy recipients (not shown to the others)"`
	ReplyTo        []app.AddressInput    `json:"reply_to,omitempty" jsonschema:"where replies should go, when not to the inbox"`
	Subject        *string               `json:"subject,omitempty" jsonschema:"the subject (one line)"`
	Text           string                `json:"text,omitempty" jsonschema:"the plain text body"`
	HTML           string                `json:"html,omitempty" jsonschema:"an HTML body, beside or instead of text"`
	Attachments    []app.AttachmentInput `json:"attachments,omitempty" jsonschema:"files to attach"`
	Headers        map[string]string     `json:"headers,omitempty" jsonschema:"extra headers: only X-* and List-Unsubscribe, List-Unsubscribe-Post, Auto-Submitted, Precedence, Keywords"`
	IdempotencyKey *string               `json:"idempotency_key,omitempty" jsonschema:"1 to 256 characters of A-Za-z0-9-._~:; a retry with the same key and arguments answers the first call's result and sends nothing (kept 30 days)"`
}

type sendArgs struct {
	InboxID string `json:"inbox_id" jsonschema:"the inbox to send from (its address is the From)"`
	sendFields
}

type replyArgs struct {
	InboxID          string `json:"inbox_id" jsonschema:"the inbox the message being answered is in (its address is the From)"`
	ReplyToMessageID string `json:"reply_to_message_id" jsonschema:"the message to answer: the reply joins its thread; the subject defaults to Re: its subject, the recipients to its sender (or, for a message the inbox sent, its recipients)"`
	sendFields
}

// sendSchemas are the schemas of the types whose JSON is not their Go
// shape: an address is a string or an object.
func sendSchemas() map[reflect.Type]*jsonschema.Schema {
	str := func(d string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: d} }
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[app.AddressInput](): {
			Description: `"a@example.com", "Name <a@example.com>" or {"email": "a@example.com", "name": "Name"}`,
			AnyOf: []*jsonschema.Schema{str("an address"), {Type: "object", Required: []string{"email"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
				Properties: map[string]*jsonschema.Schema{"email": str("the address"), "name": str("the display name")}}},
		},
		reflect.TypeFor[app.AttachmentInput](): {
			Type: "object", Required: []string{"filename", "content_base64"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
			Properties: map[string]*jsonschema.Schema{"filename": str("the file's name"), "content_type": str("its media type (default application/octet-stream)"),
				"content_base64": str("its content, base64")},
		},
	}
}

type sendOut struct {
	Result     string  `json:"result" jsonschema:"queued (the message is stored and being delivered) or approval_required (held until a person approves it)"`
	MessageID  *string `json:"message_id" jsonschema:"when queued: the message (get_message shows its delivery state)"`
	ThreadID   *string `json:"thread_id" jsonschema:"when queued: its thread"`
	InboxID    string  `json:"inbox_id"`
	DraftID    *string `json:"draft_id" jsonschema:"when held: the draft"`
	ApprovalID *string `json:"approval_id" jsonschema:"when held: the approval to follow with get_approval"`
	Replayed   bool    `json:"replayed" jsonschema:"this idempotency_key was used with the same arguments before: this is that call's result, and nothing was sent now"`
}

func (s *server) sendMessage(ctx context.Context, c app.Caller, in *sendArgs) (render, error) {
	return s.send(ctx, c, "send_message", in.InboxID, in.sendFields, "")
}

func (s *server) replyToMessage(ctx context.Context, c app.Caller, in *replyArgs) (render, error) {
	return s.send(ctx, c, "reply_to_message", in.InboxID, in.sendFields, in.ReplyToMessageID)
}

// send is app.Send with a tool's arguments. The request an
// idempotency_key identifies is the tool and its arguments, the key left
// out.
func (s *server) send(ctx context.Context, c app.Caller, tool, inboxID string, f sendFields, replyTo string) (render, error) {
	var idem *app.Idempotency
	if f.IdempotencyKey != nil { // "" too: an invalid key, as the REST header's
		req := f
		req.IdempotencyKey = nil
		idem = &app.Idempotency{Key: *f.IdempotencyKey, Param: "idempotency_key", Op: tool,
			Request: func() ([]byte, error) {
				return json.Marshal(struct {
					sendFields
					ReplyToMessageID string `json:"reply_to_message_id"`
				}{req, replyTo})
			}}
	}
	res, err := s.app.Send(ctx, c, inboxID, idem, func(v any) error {
		*v.(*app.SendInput) = app.SendInput{To: f.To, Cc: f.Cc, Bcc: f.Bcc, ReplyTo: f.ReplyTo, Subject: f.Subject, Text: f.Text,
			HTML: f.HTML, Attachments: f.Attachments, ReplyToMessageID: replyTo, Headers: f.Headers}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(*fence) (result, error) {
		out := sendOut{Result: res.Result, InboxID: res.InboxID, Replayed: res.Replayed,
			MessageID: strOrNull(res.MessageID), ThreadID: strOrNull(res.ThreadID), DraftID: strOrNull(res.DraftID), ApprovalID: strOrNull(res.ApprovalID)}
		var text string
		if res.Result == app.SendApprovalRequired {
			text = fmt.Sprintf("Held for approval: the inbox's send policy keeps this send until a person approves it. Approval %s (draft %s); follow it with get_approval.\n",
				res.ApprovalID, res.DraftID)
		} else {
			text = fmt.Sprintf("Queued: message %s in thread %s of inbox %s is stored and being delivered; get_message shows its delivery state.\n",
				res.MessageID, res.ThreadID, res.InboxID)
		}
		if res.Replayed {
			text = "This idempotency_key was used with the same arguments before: nothing was sent now. The first call's result: " + text
		}
		return newResult(out, text)
	}, nil
}
