package app

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/inboxd/inboxd/store"
)

func (e *env) testInbox(address string) store.Inbox {
	e.t.Helper()
	ib, err := e.db.CreateInbox(e.ctx, e.boot.ProjectID, store.NewInbox{Address: address, DisplayName: "QA", Environment: "test"})
	if err != nil {
		e.t.Fatal(err)
	}
	return ib
}

// The scope first, before the input is read; then the input, the inbox
// within the grant, test inboxes only, and each form's own rules, with
// the API's messages.
func TestTestInboundValidation(t *testing.T) {
	e := newEnv(t)
	qa := e.testInbox("qa@localhost")
	_, err := e.app.TestInbound(e.ctx, e.caller(nil, "messages:send"), untouched(t))
	wantError(t, err, EPermissionDenied, "")
	c := e.caller([]string{qa.ID, e.boot.Inbox.ID}, "test:write")
	for _, x := range []struct {
		body, param, message string
	}{
		{`{}`, "inbox_id", "inbox_id is required."},
		{`{"inbox_id":"` + e.boot.Inbox.ID + `","raw":"x"}`, "inbox_id", "Simulated inbound mail goes to test inboxes only; inbox@localhost is live."},
		{`{"inbox_id":"` + qa.ID + `","raw":"x","subject":"s"}`, "raw", "Give either raw or the structured fields, not both."},
		{`{"inbox_id":"` + qa.ID + `","raw":"x","references":[]}`, "raw", "Give either raw or the structured fields, not both."},
		{`{"inbox_id":"` + qa.ID + `","raw":""}`, "raw", "raw is empty; give an RFC 5322 message."},
		{`{"inbox_id":"` + qa.ID + `","raw":"\r\n \t"}`, "raw", "raw is empty; give an RFC 5322 message."},
		{`{"inbox_id":"` + qa.ID + `","text":"t"}`, "from", `from must be an address ("Name <a@b>", "a@b" or {email,name}).`},
		{`{"inbox_id":"` + qa.ID + `","from":"not an address"}`, "from", `from must be an address ("Name <a@b>", "a@b" or {email,name}).`},
		{`{"inbox_id":"` + qa.ID + `","from":"a@x","subject":"s\r\nBcc: x","attachments":[{"content_base64":"!"}]}`,
			"attachments[0].content_base64", "content_base64 is not valid base64."},
		{`{"inbox_id":"` + qa.ID + `","from":"a@x","subject":"s\r\nBcc: x"}`, "subject", "subject must not contain line breaks."},
		{`{"inbox_id":"` + qa.ID + `","from":{"email":"a@x","name":"A\nB"}}`, "from", "from must not contain line breaks."},
		{`{"inbox_id":"` + qa.ID + `","from":"a@x","to":["qa@localhost","not an address"]}`, "to[1].email", `to[1].email: "not an address" is not a valid email address.`},
		{`{"inbox_id":"` + qa.ID + `","from":"a@x","to":[""]}`, "to[0].email", `to[0].email: "" is not a valid email address.`},
	} {
		_, err := e.app.TestInbound(e.ctx, c, input(x.body))
		wantError(t, err, EInvalidRequest, x.param)
		if m := ErrorMessage(err); m != x.message {
			t.Errorf("%s: %q, want %q", x.body, m, x.message)
		}
	}
	other := e.testInbox("other@localhost")
	if _, err := e.app.TestInbound(e.ctx, c, input(`{"inbox_id":"`+other.ID+`","raw":"x","subject":"s"}`)); err != ErrNotFound {
		t.Errorf("an inbox outside the grant: %v, want not found before the input's rules", err)
	}
	if msgs, err := e.db.InboxMessages(e.ctx, qa.ID); err != nil || len(msgs) != 0 {
		t.Errorf("stored %d refused mails (%v)", len(msgs), err)
	}
}

// Both forms go through the real ingest: stored, then a duplicate of the
// stored copy for the same message again. The structured form is
// composed from what was given, to the inbox by default.
func TestTestInboundIngests(t *testing.T) {
	e := newEnv(t)
	qa := e.testInbox("qa@localhost")
	c := e.caller(nil, "test:write")
	raw := `{"inbox_id":"` + qa.ID + `","raw":"From: a@x\r\nMessage-ID: <once@x>\r\nSubject: s\r\n\r\nbody\r\n"}`
	first, err := e.app.TestInbound(e.ctx, c, input(raw))
	if err != nil || first.Duplicate || first.Deferred || first.MessageID == "" || first.InboxID != qa.ID {
		t.Fatalf("raw: %+v, %v", first, err)
	}
	again, err := e.app.TestInbound(e.ctx, c, input(raw))
	if err != nil || !again.Duplicate || again.MessageID != first.MessageID || again.ThreadID != first.ThreadID {
		t.Errorf("raw again: %+v, %v", again, err)
	}
	m, err := e.db.GetMessage(e.ctx, qa.ID, first.MessageID)
	if err != nil || !m.Simulated {
		t.Errorf("stored: %+v, %v", m, err)
	}

	d, err := e.app.TestInbound(e.ctx, c, input(`{"inbox_id":"`+qa.ID+`","from":"Ann <ann@x>","subject":"Re: s","text":"hi",
		"in_reply_to":" <once@x> ","references":["<r1@x> <r2@x>","bare-ref",""],
		"attachments":[{"filename":"a.bin","content_base64":"AAE="},{"content_type":"text/plain","content_base64":""}]}`))
	if err != nil || d.Duplicate || d.ThreadID != first.ThreadID {
		t.Fatalf("structured: %+v, %v (want the thread of <once@x>)", d, err)
	}
	got, err := e.db.GetMessage(e.ctx, qa.ID, d.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	name := func(a *store.Address) string {
		if a == nil || a.Name == nil {
			return ""
		}
		return *a.Name
	}
	if got.From == nil || got.From.Email != "ann@x" || name(got.From) != "Ann" || len(got.To) != 1 || got.To[0].Email != "qa@localhost" ||
		name(&got.To[0]) != "QA" || got.Subject != "Re: s" || got.Preview != "hi" || !slices.Equal(got.InReplyTo, []string{"<once@x>"}) ||
		!slices.Equal(got.References, []string{"<r1@x>", "<r2@x>", "<bare-ref>"}) || !got.CreatedAt.Equal(e.clock.Now()) || !got.Simulated {
		t.Errorf("composed %+v", got)
	}
	atts, err := e.db.Attachments(e.ctx, d.MessageID)
	if err != nil || len(atts) != 2 || atts[0].ContentType != "application/octet-stream" || atts[0].Bytes != 2 ||
		atts[1].ContentType != "text/plain" {
		t.Errorf("attachments %+v (%v)", atts, err)
	}
}

func TestAddressInput(t *testing.T) {
	for in, want := range map[string]AddressInput{
		`"a@b"`:                        {Email: "a@b"},
		`" a@b "`:                      {Email: "a@b"},
		`"Ann <a@b>"`:                  {Email: "a@b", Name: "Ann"},
		`"\"Ann B\" <a@b>"`:            {Email: "a@b", Name: "Ann B"},
		`{"email":"a@b","name":"Ann"}`: {Email: "a@b", Name: "Ann"},
	} {
		var got AddressInput
		if err := input(in)(&got); err != nil || got != want {
			t.Errorf("%s: %+v, %v", in, got, err)
		}
	}
	var got AddressInput
	var typ *json.UnmarshalTypeError
	if err := input(`{"mail":"a@b"}`)(&got); !errors.As(err, &typ) || typ.Type != reflect.TypeFor[AddressInput]() {
		t.Errorf("unknown field: %v, want a type error naming AddressInput", err)
	}
}
