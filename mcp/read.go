package mcp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/inboxd/inboxd/app"
)

// The read tools. Each calls the operation of the REST route it mirrors;
// integers are handed over as text, as a query string would be, so that
// app checks them (after the scope) by its own rules and names them.

func itoa(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}

func ptr[T any](v T) *T { return &v }

// maxChars checks a call's max_chars; nil is DefaultMaxChars.
func maxChars(n *int) (int, error) {
	if n == nil {
		return DefaultMaxChars, nil
	}
	if *n < MinMaxChars || *n > HardMaxChars {
		return 0, app.Invalidf("max_chars", "max_chars must be an integer from %d to %d.", MinMaxChars, HardMaxChars)
	}
	return *n, nil
}

// bodyForm checks a call's body; "" is extracted.
func bodyForm(form string) (string, error) {
	switch form {
	case "":
		return app.BodyExtracted, nil
	case app.BodyExtracted, app.BodyText, app.BodyHTML:
		return form, nil
	}
	return "", app.Invalidf("body", "body must be extracted, text or html.")
}

// list is a list tool: a page of rows from the operation, each row
// rendered as an object and a block of text, the page within
// DefaultMaxChars.
type list[In, R, O any] struct {
	tool  string
	limit func(*In) *int
	fetch func(ctx context.Context, c app.Caller, in *In, limit string) (app.Page[R], error)
	head  func(in *In, f *fence, n int) string                  // the text above the rows
	row   func(r R, f *fence) (O, string)                       // a row's object and text
	out   func(rows []O, next *string, more bool, f *fence) any // the structured result
	one   func(R) string                                        // the narrower call for a row too large
}

func (l list[In, R, O]) handler(ctx context.Context, c app.Caller, in *In) (render, error) {
	fetch := func(limit string) (app.Page[R], error) { return l.fetch(ctx, c, in, limit) }
	page, err := fetch(itoa(l.limit(in)))
	if err != nil {
		return nil, err
	}
	return func(f *fence) (result, error) {
		// A page that does not fit is asked for again with fewer rows, so
		// that its cursor is still the operation's, just after the last
		// row shown; a single row that does not fit names the narrower
		// call.
		for {
			rows := []O{}
			var b strings.Builder
			b.WriteString(l.head(in, f, len(page.Rows)))
			for _, r := range page.Rows {
				o, text := l.row(r, f)
				rows = append(rows, o)
				b.WriteString(text)
			}
			next := nextCursor(page)
			b.WriteString(more(page.HasMore, next, l.tool))
			res, err := newResult(l.out(rows, next, page.HasMore, f), b.String())
			if err != nil || res.size() <= DefaultMaxChars {
				return res, err
			}
			n := len(page.Rows)
			if n <= 1 {
				return result{}, tooLargef("one row does not fit in %d characters: %s", DefaultMaxChars, l.one(page.Rows[0]))
			}
			if page, err = fetch(strconv.Itoa(max(1, min(n-1, n*DefaultMaxChars/res.size())))); err != nil {
				return result{}, err
			}
		}
	}, nil
}

func nextCursor[R any](p app.Page[R]) *string {
	if p.Next == "" {
		return nil
	}
	return &p.Next
}

type inboxesArgs struct {
	Limit  *int   `json:"limit,omitempty" jsonschema:"how many inboxes to list, 1 to 100 (default 25)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page, to read on"`
}

type inboxesOut struct {
	Inboxes    []inboxJSON `json:"inboxes"`
	NextCursor *string     `json:"next_cursor" jsonschema:"pass as cursor for the next page; null on the last"`
	HasMore    bool        `json:"has_more"`
	Fence      fenceJSON   `json:"fence"`
}

func (s *server) listInboxes() handler[inboxesArgs] {
	return list[inboxesArgs, app.Inbox, inboxJSON]{tool: "list_inboxes",
		limit: func(in *inboxesArgs) *int { return in.Limit },
		fetch: func(ctx context.Context, c app.Caller, in *inboxesArgs, limit string) (app.Page[app.Inbox], error) {
			return s.app.ListInboxes(ctx, c, app.PageParams{Limit: limit, Cursor: in.Cursor})
		},
		head: func(_ *inboxesArgs, f *fence, n int) string { return f.notice() + fmt.Sprintf("%d inbox(es):\n", n) },
		row: func(ib app.Inbox, f *fence) (inboxJSON, string) {
			o := inboxObject(ib, f)
			return o, fmt.Sprintf("- %s %s · %s · send policy %s\n", o.ID, o.Address, o.Environment, o.SendPolicy)
		},
		out: func(rows []inboxJSON, next *string, more bool, f *fence) any {
			return inboxesOut{Inboxes: rows, NextCursor: next, HasMore: more, Fence: f.json()}
		},
		one: func(ib app.Inbox) string { return "inbox " + ib.ID },
	}.handler
}

type threadsArgs struct {
	InboxID string `json:"inbox_id" jsonschema:"the inbox (an id from list_inboxes)"`
	Q       string `json:"q,omitempty" jsonschema:"search: words are ANDed, \"double quotes\" make a phrase, a trailing * a prefix"`
	Limit   *int   `json:"limit,omitempty" jsonschema:"how many threads to list, 1 to 100 (default 25)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page, to read on"`
}

type threadsOut struct {
	Threads    []threadJSON `json:"threads"`
	NextCursor *string      `json:"next_cursor" jsonschema:"pass as cursor for the next page; null on the last"`
	HasMore    bool         `json:"has_more"`
	Fence      fenceJSON    `json:"fence"`
}

func (s *server) listThreads() handler[threadsArgs] {
	return list[threadsArgs, app.Thread, threadJSON]{tool: "list_threads",
		limit: func(in *threadsArgs) *int { return in.Limit },
		fetch: func(ctx context.Context, c app.Caller, in *threadsArgs, limit string) (app.Page[app.Thread], error) {
			return s.app.ListThreads(ctx, c, in.InboxID, app.ThreadsParams{PageParams: app.PageParams{Limit: limit, Cursor: in.Cursor}, Q: in.Q})
		},
		head: func(in *threadsArgs, f *fence, n int) string {
			return f.notice() + fmt.Sprintf("%d thread(s) of inbox %s, the most recently active first:\n", n, in.InboxID)
		},
		row: func(t app.Thread, f *fence) (threadJSON, string) {
			o := threadObject(t, f, listCut)
			return o, fmt.Sprintf("- %s · %d message(s) · last %s %s\n  Subject: %s\n  %s\n", o.ID, o.MessageCount,
				o.LastMessageDirection, o.LastMessageAt, o.Subject, o.Preview)
		},
		out: func(rows []threadJSON, next *string, more bool, f *fence) any {
			return threadsOut{Threads: rows, NextCursor: next, HasMore: more, Fence: f.json()}
		},
		one: func(t app.Thread) string { return "read it with read_thread, thread_id " + strconv.Quote(t.ID) },
	}.handler
}

type messagesArgs struct {
	InboxID   string `json:"inbox_id" jsonschema:"the inbox (an id from list_inboxes)"`
	Q         string `json:"q,omitempty" jsonschema:"search: words are ANDed, \"double quotes\" make a phrase, a trailing * a prefix"`
	Direction string `json:"direction,omitempty" jsonschema:"inbound or outbound; both when left out"`
	Limit     *int   `json:"limit,omitempty" jsonschema:"how many messages to list, 1 to 100 (default 25)"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page, to read on"`
}

// listedMessageJSON is a message of a list: its metadata and the start
// of its text.
type listedMessageJSON struct {
	messageJSON
	Preview string `json:"preview" jsonschema:"the start of its text, fenced"`
}

type messagesOut struct {
	Messages   []listedMessageJSON `json:"messages"`
	NextCursor *string             `json:"next_cursor" jsonschema:"pass as cursor for the next page; null on the last"`
	HasMore    bool                `json:"has_more"`
	Fence      fenceJSON           `json:"fence"`
}

// messageRow is a message with its extras.
type messageRow struct {
	m    app.Message
	env  string // the inbox's environment
	atts []app.Attachment
	dels []app.DeliveryStatus
}

func (s *server) listMessages() handler[messagesArgs] {
	return list[messagesArgs, messageRow, listedMessageJSON]{tool: "list_messages",
		limit: func(in *messagesArgs) *int { return in.Limit },
		fetch: func(ctx context.Context, c app.Caller, in *messagesArgs, limit string) (app.Page[messageRow], error) {
			msgs, err := s.app.InboxMessages(ctx, c, in.InboxID, app.InboxMessagesParams{
				PageParams: app.PageParams{Limit: limit, Cursor: in.Cursor}, Q: in.Q, Direction: in.Direction})
			rows := make([]messageRow, len(msgs.Rows))
			for i, m := range msgs.Rows {
				rows[i] = messageRow{m, msgs.Inbox.Environment, msgs.Attachments[m.ID], msgs.Deliveries[m.ID]}
			}
			return app.Page[messageRow]{Rows: rows, Next: msgs.Next, HasMore: msgs.HasMore}, err
		},
		head: func(in *messagesArgs, f *fence, n int) string {
			return f.notice() + fmt.Sprintf("%d message(s) of inbox %s, newest first:\n\n", n, in.InboxID)
		},
		row: func(r messageRow, f *fence) (listedMessageJSON, string) {
			o := listedMessageJSON{messageObject(r.m, r.env, r.atts, r.dels, f, listCut, listAddresses), f.wrap(cut(r.m.Preview, listCut))}
			var b strings.Builder
			writeMessageText(&b, o.messageJSON)
			fmt.Fprintf(&b, "%s\n\n", o.Preview)
			return o, b.String()
		},
		out: func(rows []listedMessageJSON, next *string, more bool, f *fence) any {
			return messagesOut{Messages: rows, NextCursor: next, HasMore: more, Fence: f.json()}
		},
		one: func(r messageRow) string { return "read it with get_message, message_id " + strconv.Quote(r.m.ID) },
	}.handler
}

// Arguments the tools with bodies share.
type bodyArgs struct {
	Body     string `json:"body,omitempty" jsonschema:"which form of the body: extracted (default: the new text, quoted replies left out), text (the text/plain part, whole) or html (the text/html part, sanitized)"`
	MaxChars *int   `json:"max_chars,omitempty" jsonschema:"the most characters the result may hold, 2000 to 131072 (default 40000); bodies are cut to fit"`
}

// check checks them, once the operation has checked the caller.
func (a bodyArgs) check() (form string, limit int, err error) {
	if form, err = bodyForm(a.Body); err != nil {
		return "", 0, err
	}
	limit, err = maxChars(a.MaxChars)
	return form, limit, err
}

type readThreadArgs struct {
	InboxID       string `json:"inbox_id" jsonschema:"the inbox (an id from list_inboxes)"`
	ThreadID      string `json:"thread_id" jsonschema:"the thread (an id from list_threads or a message's thread_id)"`
	AfterSequence *int   `json:"after_sequence,omitempty" jsonschema:"read only the messages after this sequence (the next_after_sequence of the previous page); from the first when left out"`
	Limit         *int   `json:"limit,omitempty" jsonschema:"the most messages to read, 1 to 100 (default 50); fewer come back when their bodies fill the result"`
	bodyArgs
}

type readThreadOut struct {
	Thread            threadJSON          `json:"thread"`
	Messages          []bodiedMessageJSON `json:"messages"`
	HasMore           bool                `json:"has_more"`
	NextAfterSequence *int64              `json:"next_after_sequence" jsonschema:"when has_more: pass as after_sequence to read on; else null"`
	Fence             fenceJSON           `json:"fence"`
}

func (s *server) readThread(ctx context.Context, c app.Caller, in *readThreadArgs) (render, error) {
	read, err := s.app.ReadThread(ctx, c, in.InboxID, in.ThreadID, app.ThreadMessagesParams{
		PageParams: app.PageParams{Limit: itoa(in.Limit)}, AfterSequence: itoa(in.AfterSequence)})
	if err != nil {
		return nil, err
	}
	form, limit, err := in.check()
	if err != nil {
		return nil, err
	}
	msgs := make([]bodied, len(read.Rows))
	for i, m := range read.Rows {
		msgs[i] = bodied{m: m, env: read.Inbox.Environment, atts: read.Attachments[m.ID], dels: read.Deliveries[m.ID], body: read.Bodies[m.ID]}
	}
	// The thread's subject and preview are shown whole, unless the result
	// cannot hold them beside the first message (which may show the same
	// subject again): then they are cut, as a list cuts them, so that a
	// stranger's subject cannot keep the thread from being read.
	render := func(f *fence, n int) (result, error) {
		out := readThreadOut{Thread: threadObject(read.Thread, f, n), Messages: []bodiedMessageJSON{}, HasMore: true,
			NextAfterSequence: ptr(int64(placeholder)), Fence: f.json()}
		header := fmt.Sprintf("%sThread %s of inbox %s · %d message(s) · started %s\nSubject: %s\n\n", f.notice(),
			out.Thread.ID, out.Thread.InboxID, out.Thread.MessageCount, out.Thread.CreatedAt, out.Thread.Subject)
		footer := fmt.Sprintf("More follow: call read_thread again with after_sequence %d.\n", placeholder)
		sp, err := newSpace(limit, out, header+footer)
		if err != nil {
			return result{}, err
		}
		if !sp.fits(0, 0) { // a page with no messages too
			return result{}, tooLargef("thread %s does not fit in %d characters", read.Thread.ID, limit)
		}
		shown, texts, err := fitBodied(ctx, sp, f, form, threadAddresses, msgs, func(m app.Message) string {
			return fmt.Sprintf("read it with get_message, message_id %q (with max_chars up to %d)", m.ID, HardMaxChars)
		})
		if err != nil {
			return result{}, err
		}
		out.Messages = shown
		out.HasMore = read.HasMore || len(shown) < len(msgs)
		out.NextAfterSequence = nil
		footer = "This is the end of the thread.\n"
		if out.HasMore && len(shown) > 0 {
			out.NextAfterSequence = ptr(shown[len(shown)-1].Sequence)
			footer = fmt.Sprintf("More follow: call read_thread again with after_sequence %d.\n", *out.NextAfterSequence)
		}
		return finish(limit, out, header+strings.Join(texts, "\n")+"\n"+footer)
	}
	return func(f *fence) (result, error) {
		r, err := render(f, 0)
		if big := (*tooLarge)(nil); errors.As(err, &big) {
			r, err = render(f, listCut)
		}
		return r, err
	}, nil
}

// newSpace is the space of a result whose envelope, without its list's
// entries, is out (its numbers at their widest) and whose text outside
// the entries is text.
func newSpace(limit int, out any, text string) (*space, error) {
	r, err := newResult(out, text)
	if err != nil {
		return nil, err
	}
	sp := &space{limit: limit}
	sp.take(runes(string(r.structured)), runes(r.text))
	return sp, nil
}

// finish encodes a fitted result and checks that it did fit.
func finish(limit int, out any, text string) (result, error) {
	r, err := newResult(out, text)
	if err == nil && r.size() > limit {
		err = fmt.Errorf("mcp: a fitted result of %d characters is over its limit of %d", r.size(), limit)
	}
	return r, err
}

type getMessageArgs struct {
	InboxID   string `json:"inbox_id" jsonschema:"the inbox (an id from list_inboxes)"`
	MessageID string `json:"message_id" jsonschema:"the message"`
	Offset    *int   `json:"offset,omitempty" jsonschema:"where in the body to start, in characters: the next_offset of a cut body (default 0)"`
	bodyArgs
}

type getMessageOut struct {
	Message bodiedMessageJSON `json:"message"`
	Fence   fenceJSON         `json:"fence"`
}

func (s *server) getMessage(ctx context.Context, c app.Caller, in *getMessageArgs) (render, error) {
	v, err := s.app.Message(ctx, c, in.InboxID, in.MessageID)
	if err != nil {
		return nil, err
	}
	body, err := s.app.MessageBody(ctx, c, in.InboxID, in.MessageID)
	if err != nil {
		return nil, err
	}
	form, limit, err := in.check()
	if err != nil {
		return nil, err
	}
	offset := 0
	if in.Offset != nil {
		if offset = *in.Offset; offset < 0 {
			return nil, app.Invalidf("offset", "offset must be a non-negative integer.")
		}
	}
	return func(f *fence) (result, error) {
		out := getMessageOut{Fence: f.json()}
		sp, err := newSpace(limit, out, f.notice())
		if err != nil {
			return result{}, err
		}
		shown, texts, err := fitBodied(ctx, sp, f, form, 0, []bodied{{m: v.Message, env: v.Inbox.Environment, atts: v.Attachments, dels: v.Deliveries, body: body.Parts, offset: offset}},
			func(m app.Message) string {
				if limit < HardMaxChars {
					return fmt.Sprintf("call get_message again with max_chars up to %d", HardMaxChars)
				}
				return fmt.Sprintf("its metadata is too large for MCP; read it with the REST API: GET /v1/projects/%s/inboxes/%s/messages/%s", c.ProjectID, m.InboxID, m.ID)
			})
		if err != nil {
			return result{}, err
		}
		out.Message = shown[0]
		return finish(limit, out, f.notice()+texts[0])
	}, nil
}
