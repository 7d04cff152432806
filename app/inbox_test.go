package app

import (
	"slices"
	"strings"
	"testing"
)

func TestCreateInboxValidation(t *testing.T) {
	e := newEnv(t)
	w := e.caller(nil, "inboxes:write")
	for _, c := range []struct {
		body, param, message string
	}{
		{`{"address":"a@example.com","username":"a"}`, "address", "Give either address or username and domain, not both."},
		{`{"username":"a"}`, "address", "address (or username and domain) is required."},
		{`{}`, "address", "address (or username and domain) is required."},
		{`{"address":"a+tag@example.com"}`, "address", `address "a+tag@example.com" is not a valid inbox address (user@domain, no +tag).`},
		{`{"address":"A <a@example.com>"}`, "address", `address "A <a@example.com>" is not a valid inbox address (user@domain, no +tag).`},
		{`{"address":"a@.example.com"}`, "address", `address "a@.example.com" is not a valid inbox address (user@domain, no +tag).`},
		{`{"username":"a","domain":"exa mple.com"}`, "address", `address "a@exa mple.com" is not a valid inbox address (user@domain, no +tag).`},
		{`{"address":"a@example.com","environment":"staging"}`, "environment", "environment must be live or test."},
		{`{"address":"a@example.com","display_name":"A\r\nBcc: x"}`, "display_name", "display_name must not contain control characters (line breaks, NUL, …); only tab is allowed."},
		{`{"address":"a@example.com","send_policy":"never"}`, "send_policy", "send_policy must be allow, approve_all or approve_external."},
		{`{"address":"a@example.com","allowed_domains":["ok.com","bad."]}`, "allowed_domains", `allowed_domains holds an invalid domain "bad.".`},
		{`{"address":"inbox@localhost"}`, "address", "An inbox with this address already exists."},
	} {
		_, err := e.app.CreateInbox(e.ctx, w, input(c.body))
		code := EInvalidRequest
		if strings.HasSuffix(c.message, "already exists.") {
			code = EConflict
		}
		wantError(t, err, code, c.param)
		if m := ErrorMessage(err); m != c.message {
			t.Errorf("%s: message %q, want %q", c.body, m, c.message)
		}
	}
	ib, err := e.app.CreateInbox(e.ctx, w, input(`{"username":"b","domain":"example.com","send_policy":"approve_all"}`))
	if err != nil || ib.Address != "b@example.com" || ib.Environment != "live" || ib.SendPolicy != "approve_all" {
		t.Fatalf("create: %+v, %v", ib, err)
	}
}

// Every inbox operation checks its scope before it looks at the inbox or
// the input.
func TestInboxOperationsNeedTheirScope(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	read, write := e.caller(nil, "inboxes:read"), e.caller(nil, "inboxes:write")
	for _, c := range []struct {
		name  string
		scope string
		op    func() error
	}{
		{"list", "inboxes:read", func() error { _, err := e.app.ListInboxes(e.ctx, write, PageParams{Limit: "x"}); return err }},
		{"get", "inboxes:read", func() error { _, err := e.app.Inbox(e.ctx, write, "ibx_missing"); return err }},
		{"create", "inboxes:write", func() error { _, err := e.app.CreateInbox(e.ctx, read, untouched(t)); return err }},
		{"update", "inboxes:write", func() error { _, err := e.app.UpdateInbox(e.ctx, read, ib, untouched(t)); return err }},
		{"delete", "inboxes:write", func() error { _, err := e.app.DeleteInbox(e.ctx, read, ib); return err }},
	} {
		err := c.op()
		wantError(t, err, EPermissionDenied, "")
		if m := ErrorMessage(err); m != "This API key lacks the scope "+c.scope+"." {
			t.Errorf("%s: %q", c.name, m)
		}
	}
	if _, err := e.db.GetInbox(e.ctx, e.boot.ProjectID, ib); err != nil {
		t.Errorf("the inbox is gone after a refused delete: %v", err)
	}
}

// An inbox outside the caller's grant answers exactly like one that does
// not exist, before the input is read; one inside is served.
func TestInboxOutsideTheGrantIsNotFound(t *testing.T) {
	e := newEnv(t)
	mine, other := e.inbox("mine@example.com"), e.inbox("other@example.com")
	c := e.caller([]string{mine.ID}, "inboxes:read", "inboxes:write")
	for _, id := range []string{other.ID, "ibx_missing"} {
		if _, err := e.app.Inbox(e.ctx, c, id); ErrorCode(err) != ENotFound || ErrorMessage(err) != "Resource not found." {
			t.Errorf("get %s: %v", id, err)
		}
		if _, err := e.app.UpdateInbox(e.ctx, c, id, untouched(t)); ErrorCode(err) != ENotFound || ErrorMessage(err) != "Resource not found." {
			t.Errorf("update %s: %v", id, err)
		}
		if _, err := e.app.DeleteInbox(e.ctx, c, id); ErrorCode(err) != ENotFound || ErrorMessage(err) != "Resource not found." {
			t.Errorf("delete %s: %v", id, err)
		}
	}
	if _, err := e.db.GetInbox(e.ctx, e.boot.ProjectID, other.ID); err != nil {
		t.Errorf("the inbox outside the grant was deleted: %v", err)
	}
	page, err := e.app.ListInboxes(e.ctx, c, PageParams{})
	if err != nil || len(page.Rows) != 1 || page.Rows[0].ID != mine.ID || page.HasMore {
		t.Errorf("list: %+v, %v", page, err)
	}
	got, err := e.app.UpdateInbox(e.ctx, c, mine.ID, input(`{"display_name":"Mine","allowed_domains":["example.com"]}`))
	if err != nil || got.DisplayName != "Mine" || !slices.Equal(got.AllowedDomains, []string{"example.com"}) {
		t.Errorf("update within the grant: %+v, %v", got, err)
	}
	if got, err := e.app.DeleteInbox(e.ctx, c, mine.ID); err != nil || got.ID != mine.ID {
		t.Errorf("delete within the grant: %+v, %v", got, err)
	}
	if _, err := e.db.GetInbox(e.ctx, e.boot.ProjectID, mine.ID); ErrorCode(err) != ENotFound {
		t.Errorf("deleted inbox still read: %v", err)
	}
}

// A key restricted to some inboxes creates none: the new inbox would lie
// outside its grant, and the conflict on a taken address would tell it
// what an inbox outside its grant is called. An unrestricted key creates.
func TestRestrictedKeyCreatesNoInbox(t *testing.T) {
	e := newEnv(t)
	mine := e.inbox("mine@example.com")
	e.inbox("other@example.com")
	c := e.caller([]string{mine.ID}, "inboxes:read", "inboxes:write")
	for _, addr := range []string{"new@example.com", "other@example.com"} {
		if _, err := e.app.CreateInbox(e.ctx, c, input(`{"address":"`+addr+`"}`)); ErrorCode(err) != EPermissionDenied {
			t.Errorf("restricted key creates %s: %v", addr, err)
		}
	}
	if _, err := e.app.CreateInbox(e.ctx, e.caller(nil, "inboxes:write"), input(`{"address":"new@example.com"}`)); err != nil {
		t.Errorf("unrestricted key: %v", err)
	}
}

func TestUpdateInboxRefusesImmutableFields(t *testing.T) {
	e := newEnv(t)
	c := e.caller(nil, "inboxes:write")
	for _, field := range []string{"address", "username", "domain", "environment"} {
		_, err := e.app.UpdateInbox(e.ctx, c, e.boot.Inbox.ID, input(`{"`+field+`":"x"}`))
		wantError(t, err, EInvalidRequest, field)
		if m := ErrorMessage(err); m != field+" cannot be changed; create a new inbox instead." {
			t.Errorf("%s: %q", field, m)
		}
	}
	_, err := e.app.UpdateInbox(e.ctx, c, e.boot.Inbox.ID, input(`{"send_policy":"sometimes"}`))
	wantError(t, err, EInvalidRequest, "send_policy")
	for _, field := range []string{"send_policy", "allowed_domains"} {
		_, err := e.app.UpdateInbox(e.ctx, c, e.boot.Inbox.ID, input(`{"`+field+`":null}`))
		if wantError(t, err, EInvalidRequest, field); ErrorMessage(err) != field+" must not be null." {
			t.Errorf("%s null: %q", field, ErrorMessage(err))
		}
	}
	ib, err := e.db.GetInbox(e.ctx, e.boot.ProjectID, e.boot.Inbox.ID)
	if err != nil || ib.SendPolicy != e.boot.Inbox.SendPolicy {
		t.Errorf("a refused update changed the inbox: %+v, %v", ib, err)
	}
}

// display_name is null when there is none, and null is how a PATCH
// clears it; left out, it stays.
func TestUpdateInboxClearsDisplayName(t *testing.T) {
	e := newEnv(t)
	c := e.caller(nil, "inboxes:write")
	ib, err := e.app.UpdateInbox(e.ctx, c, e.boot.Inbox.ID, input(`{"display_name":"Support"}`))
	if err != nil || ib.DisplayName != "Support" {
		t.Fatalf("set: %+v, %v", ib, err)
	}
	if ib, err = e.app.UpdateInbox(e.ctx, c, e.boot.Inbox.ID, input(`{"send_policy":"approve_all"}`)); err != nil || ib.DisplayName != "Support" {
		t.Fatalf("left out: %+v, %v", ib, err)
	}
	if ib, err = e.app.UpdateInbox(e.ctx, c, e.boot.Inbox.ID, input(`{"display_name":null}`)); err != nil || ib.DisplayName != "" || ib.SendPolicy != "approve_all" {
		t.Errorf("null: %+v, %v", ib, err)
	}
}
