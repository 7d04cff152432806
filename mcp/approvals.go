package mcp

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/inboxd/inboxd/app"
)

type approvalsArgs struct {
	InboxID string `json:"inbox_id" jsonschema:"the inbox (an id from list_inboxes)"`
	Limit   *int   `json:"limit,omitempty" jsonschema:"how many approvals to list, 1 to 100 (default 25)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page, to read on"`
}

type approvalsOut struct {
	Approvals  []approvalJSON `json:"approvals"`
	NextCursor *string        `json:"next_cursor" jsonschema:"pass as cursor for the next page; null on the last"`
	HasMore    bool           `json:"has_more"`
	Fence      fenceJSON      `json:"fence"`
}

type approvalArgs struct {
	InboxID    string `json:"inbox_id" jsonschema:"the inbox (an id from list_inboxes)"`
	ApprovalID string `json:"approval_id" jsonschema:"the approval (the approval_id a held send answered)"`
}

type approvalOut struct {
	Approval approvalJSON `json:"approval"`
	Fence    fenceJSON    `json:"fence"`
}

type approvalJSON struct {
	ID          string  `json:"id"`
	DraftID     string  `json:"draft_id"`
	InboxID     string  `json:"inbox_id"`
	Status      string  `json:"status" jsonschema:"pending, approved or rejected"`
	RequestedAt string  `json:"requested_at"`
	DecidedAt   *string `json:"decided_at"`
	DecidedBy   *string `json:"decided_by" jsonschema:"the id of the key that decided"`
	Reason      *string `json:"reason" jsonschema:"why it was rejected, as the person who decided wrote it"`
	MessageID   *string `json:"message_id" jsonschema:"once approved: the message that was sent"`
	ThreadID    *string `json:"thread_id"`
	Draft       draft   `json:"draft"`
}

// draft is what a held send would send. Its text and HTML are cut to a
// length (a list shows the start of each; get_approval more), with a flag.
type draft struct {
	To            []addressJSON    `json:"to"`
	Cc            []addressJSON    `json:"cc"`
	Bcc           []addressJSON    `json:"bcc"`
	ReplyTo       []addressJSON    `json:"reply_to" jsonschema:"where replies will go"`
	Subject       string           `json:"subject" jsonschema:"fenced"`
	Headers       []headerJSON     `json:"headers" jsonschema:"the headers the send set, as they will be sent"`
	Text          *string          `json:"text" jsonschema:"fenced; null without a text part"`
	TextTruncated bool             `json:"text_truncated"`
	HTML          *string          `json:"html" jsonschema:"fenced; null without an HTML part"`
	HTMLTruncated bool             `json:"html_truncated"`
	Attachments   []attachmentJSON `json:"attachments"`
}

type headerJSON struct {
	Name  string `json:"name" jsonschema:"fenced"`
	Value string `json:"value" jsonschema:"fenced"`
}

// approvalCut is the length of a draft's text and HTML in a list, and
// in get_approval, in characters.
const (
	approvalCutList = 500
	approvalCutOne  = 15000
)

func approvalObject(ap app.Approval, f *fence, n int) approvalJSON {
	d := app.DraftOf(ap)
	o := approvalJSON{ID: ap.ID, DraftID: ap.DraftID, InboxID: ap.InboxID, Status: ap.Status, RequestedAt: timeJSON(ap.RequestedAt),
		DecidedAt: timePtr(ap.DecidedAt), DecidedBy: ap.DecidedBy, Reason: ap.Reason, MessageID: ap.MessageID, ThreadID: ap.ThreadID,
		Draft: draft{To: addresses(d.To, f, listCut), Cc: addresses(d.Cc, f, listCut),
			Bcc: addresses(d.Bcc, f, listCut), ReplyTo: addresses(d.ReplyTo, f, listCut), Subject: f.wrap(cut(d.Subject, listCut)),
			Headers: make([]headerJSON, 0, len(d.Headers)), Attachments: []attachmentJSON{}}}
	for _, h := range d.Headers {
		o.Draft.Headers = append(o.Draft.Headers, headerJSON{Name: f.wrap(cut(h.Name, listCut)), Value: f.wrap(cut(h.Value, listCut))})
	}
	part := func(s *string) (*string, bool) {
		if s == nil {
			return nil, false
		}
		c := cut(*s, n)
		return f.wrapPtr(&c), c != *s
	}
	o.Draft.Text, o.Draft.TextTruncated = part(d.Text)
	o.Draft.HTML, o.Draft.HTMLTruncated = part(d.HTML)
	for _, a := range d.Attachments {
		o.Draft.Attachments = append(o.Draft.Attachments, attachmentJSON{Filename: f.wrapPtr(strOrNull(cut(a.Filename, listCut))),
			ContentType: f.wrap(cut(a.ContentType, listCut)), Bytes: int64(len(a.Data)), Disposition: a.Disposition})
	}
	return o
}

func writeApprovalText(b *strings.Builder, o approvalJSON) {
	fmt.Fprintf(b, "Approval %s · %s · requested %s", o.ID, o.Status, o.RequestedAt)
	if o.DecidedAt != nil {
		fmt.Fprintf(b, " · decided %s", *o.DecidedAt)
	}
	if o.MessageID != nil {
		fmt.Fprintf(b, " · sent as message %s (thread %s)", *o.MessageID, *o.ThreadID)
	}
	b.WriteString("\n")
	if o.Reason != nil {
		fmt.Fprintf(b, "Reason given: %s\n", *o.Reason)
	}
	for _, l := range []struct {
		name string
		as   []addressJSON
	}{{"To", o.Draft.To}, {"Cc", o.Draft.Cc}, {"Bcc", o.Draft.Bcc}, {"Reply-To", o.Draft.ReplyTo}} {
		if len(l.as) > 0 {
			fmt.Fprintf(b, "%s: %s\n", l.name, addressesText(l.as))
		}
	}
	fmt.Fprintf(b, "Subject: %s\n", o.Draft.Subject)
	for _, h := range o.Draft.Headers {
		fmt.Fprintf(b, "Header %s: %s\n", h.Name, h.Value)
	}
	for _, a := range o.Draft.Attachments {
		name := "(no filename)"
		if a.Filename != nil {
			name = *a.Filename
		}
		fmt.Fprintf(b, "Attachment: %s (%s, %d bytes)\n", name, a.ContentType, a.Bytes)
	}
	if o.Draft.Text != nil {
		fmt.Fprintf(b, "Text%s:\n%s\n", cutNote(o.Draft.TextTruncated), *o.Draft.Text)
	}
	if o.Draft.HTML != nil {
		fmt.Fprintf(b, "HTML%s:\n%s\n", cutNote(o.Draft.HTMLTruncated), *o.Draft.HTML)
	}
}

func cutNote(cut bool) string {
	if cut {
		return " (cut here)"
	}
	return ""
}

func (s *server) listApprovals() handler[approvalsArgs] {
	return list[approvalsArgs, app.Approval, approvalJSON]{tool: "list_approvals",
		limit: func(in *approvalsArgs) *int { return in.Limit },
		fetch: func(ctx context.Context, c app.Caller, in *approvalsArgs, limit string) (app.Page[app.Approval], error) {
			return s.app.ListApprovals(ctx, c, in.InboxID, app.PageParams{Limit: limit, Cursor: in.Cursor})
		},
		head: func(in *approvalsArgs, f *fence, n int) string {
			return f.notice() + fmt.Sprintf("%d approval(s) of inbox %s, newest first:\n\n", n, in.InboxID)
		},
		row: func(ap app.Approval, f *fence) (approvalJSON, string) {
			o := approvalObject(ap, f, approvalCutList)
			var b strings.Builder
			writeApprovalText(&b, o)
			b.WriteString("\n")
			return o, b.String()
		},
		out: func(rows []approvalJSON, next *string, more bool, f *fence) any {
			return approvalsOut{Approvals: rows, NextCursor: next, HasMore: more, Fence: f.json()}
		},
		one: func(ap app.Approval) string { return "read it with get_approval, approval_id " + strconv.Quote(ap.ID) },
	}.handler
}

func (s *server) getApproval(ctx context.Context, c app.Caller, in *approvalArgs) (render, error) {
	ap, err := s.app.Approval(ctx, c, in.InboxID, in.ApprovalID)
	if err != nil {
		return nil, err
	}
	return func(f *fence) (result, error) {
		out := approvalOut{Approval: approvalObject(ap, f, approvalCutOne), Fence: f.json()}
		var b strings.Builder
		b.WriteString(f.notice())
		writeApprovalText(&b, out.Approval)
		r, err := newResult(out, b.String())
		if err == nil && r.size() > DefaultMaxChars {
			return result{}, tooLargef("approval %s does not fit in %d characters: read it with the REST API: GET /v1/projects/%s/inboxes/%s/approvals/%s",
				ap.ID, DefaultMaxChars, c.ProjectID, ap.InboxID, ap.ID)
		}
		return r, err
	}, nil
}
