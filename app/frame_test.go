package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/store"
)

// inlineMail has an HTML body with a cid: image and a remote one, its
// inline part (logo@x), and an attachment without a Content-ID.
const inlineMail = "From: a@example.com\r\nTo: inbox@localhost\r\nMessage-ID: <inline@x>\r\nSubject: logo\r\n" +
	"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
	"--b\r\nContent-Type: text/html\r\n\r\n<p>Hi</p><img src=\"cid:logo@x\"><img src=\"https://t.example/p.gif\">\r\n" +
	"--b\r\nContent-Type: image/gif\r\nContent-ID: <logo@x>\r\nContent-Disposition: inline\r\nContent-Transfer-Encoding: base64\r\n\r\nR0lGODlhAQABAAAAACw=\r\n" +
	"--b\r\nContent-Type: text/csv\r\nContent-Disposition: attachment; filename=a.csv\r\n\r\na,b\r\n--b--\r\n"

// An inline-image token serves the inline parts of the one message it was
// made for, for InlineTTL, while its key holds; nothing else, and nothing
// once tampered with, expired, or its key revoked.
func TestInlineAttachment(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, inlineMail)
	other := e.deliver(ib, rawMail("o@x", "other", "b"))
	k, _, err := e.db.CreateKey(e.ctx, e.boot.ProjectID, "console", []string{"messages:read"}, []string{ib})
	if err != nil {
		t.Fatal(err)
	}
	c := Caller{Key: k}
	b, err := e.app.MessageBody(e.ctx, c, ib, d.MessageID)
	if err != nil || len(b.Inline) != 1 {
		t.Fatalf("MessageBody: %v %+v", err, b.Inline)
	}
	token := e.app.InlineToken(c, b)
	logo := b.Inline["logo@x"]
	atts, err := e.db.Attachments(e.ctx, d.MessageID)
	if err != nil || len(atts) != 2 {
		t.Fatalf("attachments: %+v %v", atts, err)
	}
	var csv string
	for _, at := range atts {
		if at.ContentID == "" {
			csv = at.ID
		}
	}
	serve := func(token, id string) error {
		t.Helper()
		_, stream, err := e.app.InlineAttachment(e.ctx, token, id)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		if err := stream(&out); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "GIF89a") {
			t.Errorf("served %q", out.String())
		}
		return nil
	}
	if err := serve(token, logo); err != nil {
		t.Fatalf("the inline part: %v", err)
	}
	body, mac, _ := strings.Cut(token, ".")
	otherBody, _, _ := strings.Cut(e.app.InlineToken(c, Body{Inbox: b.Inbox, Message: store.Message{ID: other.MessageID}}), ".")
	for name, bad := range map[string]string{
		"no signature": body, "bad signature": body + "." + mac[:len(mac)-2] + "AA", "another body": otherBody + "." + mac,
		"a list cursor": "eyJwIjoicHJqIn0.x", "empty": "",
	} {
		if err := serve(bad, logo); ErrorCode(err) != ENotFound {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := serve(token, csv); ErrorCode(err) != ENotFound {
		t.Errorf("a part without a Content-ID: %v", err)
	}
	e.clock.Advance(InlineTTL)
	if err := serve(token, logo); ErrorCode(err) != ENotFound {
		t.Errorf("an expired token: %v", err)
	}
	token = e.app.InlineToken(c, b)
	if err := e.db.RevokeKey(e.ctx, e.boot.ProjectID, k.ID); err != nil {
		t.Fatal(err)
	}
	if err := serve(token, logo); ErrorCode(err) != ENotFound {
		t.Errorf("the token of a revoked key: %v", err)
	}
}

// OriginalHTML is the HTML as received, remote images included, under the
// body's scope and grant.
func TestOriginalHTML(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, inlineMail)
	text := e.deliver(ib, rawMail("t@x", "text", "plain"))
	if _, _, err := e.app.OriginalHTML(e.ctx, e.caller(nil, "threads:read"), ib, d.MessageID); ErrorCode(err) != EPermissionDenied {
		t.Errorf("without messages:read: %v", err)
	}
	if _, _, err := e.app.OriginalHTML(e.ctx, e.caller([]string{"ibx_other"}, "messages:read"), ib, d.MessageID); ErrorCode(err) != ENotFound {
		t.Errorf("outside the grant: %v", err)
	}
	read := e.caller(nil, "messages:read")
	html, ok, err := e.app.OriginalHTML(e.ctx, read, ib, d.MessageID)
	if err != nil || !ok || !strings.Contains(html, `<img src="https://t.example/p.gif">`) {
		t.Errorf("OriginalHTML = %q, %v, %v", html, ok, err)
	}
	if html, ok, err := e.app.OriginalHTML(e.ctx, read, ib, text.MessageID); err != nil || ok || html != "" {
		t.Errorf("a text message: %q, %v, %v", html, ok, err)
	}
}
