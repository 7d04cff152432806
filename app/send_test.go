package app

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/inboxd/inboxd/store"
)

// The scope, then the inbox within the grant, then the input: each
// refusal names its field, in the send route's words, and stores nothing.
func TestSendValidation(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	if _, err := e.app.Send(e.ctx, e.caller(nil, "messages:read"), ib, nil, untouched(t)); ErrorCode(err) != EPermissionDenied {
		t.Errorf("without messages:send: %v", err)
	}
	other := e.inbox("other@localhost")
	if _, err := e.app.Send(e.ctx, e.caller([]string{ib}, "messages:send"), other.ID, nil, untouched(t)); err != ErrNotFound {
		t.Errorf("an inbox outside the grant: %v", err)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf(`"r%d@example.com"`, i)
	}
	c := e.caller(nil, "messages:send")
	for _, x := range []struct{ body, param, message string }{
		{`{"text":"x"}`, "to", "to: at least one recipient (to, cc or bcc) is required."},
		{`{"to":["not-an-address"]}`, "to[0].email", `to[0].email: "not-an-address" is not a valid email address.`},
		{`{"to":["a@b.c"],"subject":"hi\r\nBcc: victim@x"}`, "subject", "subject: must not contain control characters (line breaks, NUL, …); only tab is allowed."},
		{`{"to":["a@b.c"],"subject":"hi\u0000there"}`, "subject", "subject: must not contain control characters (line breaks, NUL, …); only tab is allowed."},
		{`{"to":[{"email":"a@b.c","name":"A\nBcc: v@x"}]}`, "to[0].name", "to[0].name: must not contain control characters (line breaks, NUL, …); only tab is allowed."},
		{`{"to":["a@b.c"],"headers":{"X-A":"b\r\nBcc: v@x"}}`, "headers.X-A", "headers.X-A: header values must not contain control characters (line breaks, NUL, …); only tab is allowed."},
		{`{"to":["a@b.c"],"headers":{"X-A":"1","x-a":"2"}}`, "headers.x-a", `headers.x-a: header "x-a" is given twice, as "X-A" too (header names are not case-sensitive).`},
		{`{"to":["a@b.c"],"headers":{"List-Unsubscribe":"<https://e.example/ü>"}}`, "headers.List-Unsubscribe", "headers.List-Unsubscribe: List-Unsubscribe must be ASCII (percent-encode a URI beyond ASCII)."},
		{`{"to":["a@b.c"],"headers":{"From":"ceo@x"}}`, "headers.From", `headers.From: header "From" cannot be set; only X-* and List-Unsubscribe, List-Unsubscribe-Post, Auto-Submitted, Precedence, Keywords are allowed.`},
		{`{"to":["a@b.c"],"headers":{"X-` + strings.Repeat("a", 63) + `":"v"}}`, "headers.X-" + strings.Repeat("a", 63), "headers.X-" + strings.Repeat("a", 63) + ": a header name is at most 64 characters."},
		{`{"to":["a@b.c"],"headers":{"x-":"v"}}`, "headers.x-", `headers.x-: header "x-" cannot be set; only X-* and List-Unsubscribe, List-Unsubscribe-Post, Auto-Submitted, Precedence, Keywords are allowed.`},
		{`{"to":[` + strings.Join(many, ",") + `]}`, "to", "to: at most 100 recipients per message, got 101."},
		{`{"attachments":[{"filename":"a","content_base64":"!"}]}`, "attachments[0].content_base64", "content_base64 is not valid base64."},
		{`{"to":["a@b.c"],"attachments":[{"content_base64":""}]}`, "attachments[0].filename", "attachments[0].filename: a filename is required."},
		{`{"to":["a@b.c"],"attachments":[{"filename":"a\u0000.exe","content_base64":""}]}`, "attachments[0].filename", "attachments[0].filename: must not contain control characters (line breaks, NUL, …); only tab is allowed."},
		{`{"to":["a@b.c"],"attachments":[{"filename":"a","content_type":"garbage;;;==","content_base64":""}]}`, "attachments[0].content_type", `"garbage;;;==" is not a MIME type (type/subtype, optionally with parameters such as ; charset=utf-8).`},
		{`{"to":["a@b.c"],"attachments":[{"filename":"a","content_type":"text/plain\r\nBcc: v@x","content_base64":""}]}`, "attachments[0].content_type", `"text/plain\r\nBcc: v@x" is not a MIME type (type/subtype, optionally with parameters such as ; charset=utf-8).`},
	} {
		_, err := e.app.Send(e.ctx, c, ib, nil, input(x.body))
		wantError(t, err, EInvalidRequest, x.param)
		if m := ErrorMessage(err); m != x.message {
			t.Errorf("%s: %q, want %q", x.body, m, x.message)
		}
	}
	if _, err := e.app.Send(e.ctx, c, ib, nil, input(`{"reply_to_message_id":"msg_nope","text":"x"}`)); ErrorCode(err) != ENotFound {
		t.Errorf("unknown parent: %v", err)
	}
	if msgs, err := e.db.InboxMessages(e.ctx, ib); err != nil || len(msgs) != 0 {
		t.Errorf("refused sends stored %d messages (%v)", len(msgs), err)
	}
}

// An idempotency key is checked, and its errors named, as the surface
// names it; the same key with the same request replays the first result;
// a different request conflicts; a request that failed validation does not
// consume the key; and while the first request runs, a second is refused.
func TestSendIdempotency(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	c := e.caller(nil, "messages:send")
	idem := func(key, req string) *Idempotency {
		return &Idempotency{Key: key, Param: "idempotency_key", Op: "send_message", Request: func() ([]byte, error) { return []byte(req), nil }}
	}
	_, err := e.app.Send(e.ctx, c, ib, idem("", `{}`), untouched(t))
	wantError(t, err, EInvalidRequest, "idempotency_key")
	if m := ErrorMessage(err); m != "idempotency_key must be 1–256 characters of A-Z a-z 0-9 - . _ ~ :" {
		t.Errorf("bad key: %q", m)
	}

	bad := `{"text":"no recipient"}`
	if _, err := e.app.Send(e.ctx, c, ib, idem("k1", bad), input(bad)); ErrorCode(err) != EInvalidRequest {
		t.Fatalf("invalid: %v", err)
	}
	req := `{"to":["a@example.com"], "text":"hi"}`
	first, err := e.app.Send(e.ctx, c, ib, idem("k1", req), input(req))
	if err != nil || first.Result != SendQueued || first.Replayed || !strings.HasPrefix(first.MessageID, "msg_") {
		t.Fatalf("first: %+v %v", first, err)
	}
	reordered := `{"text":"hi","to":["a@example.com"]}`
	again, err := e.app.Send(e.ctx, c, ib, idem("k1", reordered), input(reordered))
	if err != nil || !again.Replayed || again.MessageID != first.MessageID || again.ThreadID != first.ThreadID {
		t.Errorf("replay (keys reordered): %+v %v", again, err)
	}
	other := `{"to":["b@example.com"]}`
	_, err = e.app.Send(e.ctx, c, ib, idem("k1", other), input(other))
	wantError(t, err, EIdempotencyConflict, "idempotency_key")

	// Held in flight: the second request with the key is refused at once.
	reading := make(chan struct{})
	release := make(chan struct{})
	slow := &Idempotency{Key: "k2", Param: "idempotency_key", Op: "send_message", Request: func() ([]byte, error) { return []byte(req), nil }}
	var wg sync.WaitGroup
	wg.Go(func() {
		e.app.Send(e.ctx, c, ib, slow, func(v any) error {
			close(reading)
			<-release
			return input(req)(v)
		})
	})
	<-reading
	_, err = e.app.Send(e.ctx, c, ib, idem("k2", req), untouched(t))
	if ErrorCode(err) != ETemporarilyUnavailable {
		t.Errorf("in flight: %v", err)
	}
	close(release)
	wg.Wait()
	if msgs, _ := e.db.InboxMessages(e.ctx, ib); len(msgs) != 2 {
		t.Errorf("%d messages stored, want 2 (k1 once, k2 once)", len(msgs))
	}
}

// A held send answers approval_required with its draft and approval, and
// a replay of its key answers the same.
func TestSendHeld(t *testing.T) {
	e := newEnv(t)
	policy := "approve_all"
	ib, err := e.db.UpdateInbox(e.ctx, e.boot.ProjectID, e.boot.Inbox.ID, store.InboxPatch{SendPolicy: &policy})
	if err != nil {
		t.Fatal(err)
	}
	c := e.caller(nil, "messages:send")
	req := `{"to":["a@example.com"],"text":"hi"}`
	idem := &Idempotency{Key: "h", Param: "Idempotency-Key", Op: "/send", Request: func() ([]byte, error) { return []byte(req), nil }}
	first, err := e.app.Send(e.ctx, c, ib.ID, idem, input(req))
	if err != nil || first.Result != SendApprovalRequired || first.ApprovalID == "" || first.DraftID == "" || first.MessageID != "" {
		t.Fatalf("held: %+v %v", first, err)
	}
	again, err := e.app.Send(e.ctx, c, ib.ID, idem, input(req))
	again.Replayed = false
	if err != nil || again != first {
		t.Errorf("replay: %+v %v, want %+v", again, err, first)
	}
}
