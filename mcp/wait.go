package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/inboxd/inboxd/app"
)

type waitArgs struct {
	InboxID        string `json:"inbox_id" jsonschema:"the inbox to wait on (an id from list_inboxes)"`
	ThreadID       string `json:"thread_id,omitempty" jsonschema:"wait only for messages of this thread; the whole inbox when left out"`
	After          string `json:"after,omitempty" jsonschema:"the cursor of the previous wait_for_message answer: answer what arrived since; when left out, wait for what arrives from now on"`
	TimeoutSeconds *int   `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for the first new message, 0 to 60 seconds (default 45)"`
	Direction      string `json:"direction,omitempty" jsonschema:"inbound (default: mail received), outbound (sends from the inbox) or any"`
	Limit          *int   `json:"limit,omitempty" jsonschema:"the most messages one answer holds, 1 to 100 (default 10); the rest come with the next call"`
	bodyArgs
}

type waitOut struct {
	Messages []bodiedMessageJSON `json:"messages" jsonschema:"the new messages, in the order they arrived; [] when none arrived in time"`
	Cursor   string              `json:"cursor" jsonschema:"pass as after to the next wait_for_message: it answers exactly what arrived after these messages"`
	HasMore  bool                `json:"has_more" jsonschema:"more new messages are waiting: the next call with cursor answers them at once"`
	Fence    fenceJSON           `json:"fence"`
}

func (s *server) waitForMessage(ctx context.Context, c app.Caller, in *waitArgs) (render, error) {
	dir := in.Direction
	switch dir {
	case "", "inbound":
		dir = "inbound"
	case "any":
		dir = ""
	}
	ctx, cancel := requestContext(ctx)
	defer cancel()
	got, err := s.app.WaitForMessages(ctx, c, in.InboxID, app.WaitParams{ThreadID: in.ThreadID, After: in.After,
		Direction: dir, Limit: itoa(in.Limit), Timeout: itoa(in.TimeoutSeconds)})
	if err != nil {
		if app.ErrorParam(err) == "direction" {
			err = app.Invalidf("direction", "direction must be inbound, outbound or any.")
		}
		return nil, err
	}
	form, limit, err := in.check()
	if err != nil {
		return nil, err
	}
	msgs := make([]bodied, len(got.Rows))
	for i, m := range got.Rows {
		msgs[i] = bodied{m: m, env: got.Inbox.Environment, atts: got.Attachments[m.ID], dels: got.Deliveries[m.ID], body: got.Bodies[m.ID]}
	}
	return func(f *fence) (result, error) {
		out := waitOut{Messages: []bodiedMessageJSON{}, Cursor: got.Next, HasMore: true, Fence: f.json()}
		header := f.notice()
		footer := fmt.Sprintf("More new messages are waiting: call wait_for_message again with after %q.\n", got.Next)
		sp, err := newSpace(limit, out, header+footer+"No new message arrived in time.\n")
		if err != nil {
			return result{}, err
		}
		shown, texts, err := fitBodied(ctx, sp, f, form, threadAddresses, msgs, func(m app.Message) string {
			return fmt.Sprintf("call wait_for_message again with max_chars up to %d, or read it with get_message, message_id %q", HardMaxChars, m.ID)
		})
		if err != nil {
			return result{}, err
		}
		out.Messages, out.HasMore = shown, got.HasMore
		if len(shown) < len(msgs) {
			// The rest are for the next call: the cursor stops after the
			// last one shown.
			out.Cursor, out.HasMore = got.After[len(shown)-1], true
		}
		var b strings.Builder
		b.WriteString(header)
		if len(shown) == 0 {
			b.WriteString("No new message arrived in time.\n")
		} else {
			fmt.Fprintf(&b, "%d new message(s):\n\n%s\n", len(shown), strings.Join(texts, "\n"))
		}
		if out.HasMore {
			fmt.Fprintf(&b, "More new messages are waiting: call wait_for_message again with after %q.\n", out.Cursor)
		} else {
			fmt.Fprintf(&b, "To wait for the next ones, call wait_for_message again with after %q.\n", out.Cursor)
		}
		return finish(limit, out, b.String())
	}, nil
}
