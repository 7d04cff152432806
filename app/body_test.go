package app

import (
	"bytes"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/corpus"
)

// The body, raw and attachment reads check their scope (raw its own,
// messages:raw) before they look at anything, and give no stream.
func TestContentNeedsItsScope(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, rawMail("c@x", "s", "b"))
	read, raw := e.caller(nil, "messages:read"), e.caller(nil, "messages:raw")
	for _, c := range []struct {
		scope string
		op    func() (Stream, error)
	}{
		{"messages:read", func() (Stream, error) { _, err := e.app.MessageBody(e.ctx, raw, ib, d.MessageID); return nil, err }},
		{"messages:raw", func() (Stream, error) { _, s, err := e.app.RawMessage(e.ctx, read, ib, d.MessageID); return s, err }},
		{"messages:read", func() (Stream, error) {
			_, s, err := e.app.Attachment(e.ctx, raw, ib, d.MessageID, "att_missing")
			return s, err
		}},
	} {
		s, err := c.op()
		wantError(t, err, EPermissionDenied, "")
		if m := ErrorMessage(err); m != "This API key lacks the scope "+c.scope+"." || s != nil {
			t.Errorf("%s: %q, stream %v", c.scope, m, s != nil)
		}
	}
	if _, s, err := e.app.RawMessage(e.ctx, raw, ib, d.MessageID); err != nil || s == nil {
		t.Errorf("raw with messages:raw: %v", err)
	}
}

// The body of a message with HTML names the inline parts its cid:
// references may use: downloadable ones only, the first of a Content-ID
// used twice.
func TestMessageBodyInlineParts(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	c := e.caller(nil, "messages:read")
	d := e.deliver(ib, corpus.XSSPayload{HTML: `<img src="cid:logo@x">`, Parts: []corpus.XSSPart{
		{ContentID: "logo@x", Filename: "logo.gif"},
		{ContentID: "run@x", Filename: "run.exe", ContentType: "application/x-msdownload"},
		{ContentID: "logo@x", Filename: "second.gif"},
	}}.Message("inline@x"))
	atts, err := e.db.Attachments(e.ctx, d.MessageID)
	if err != nil || len(atts) != 3 {
		t.Fatalf("attachments: %+v, %v", atts, err)
	}
	b, err := e.app.MessageBody(e.ctx, c, ib, d.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"logo@x": atts[0].ID}; !maps.Equal(b.Inline, want) || b.Parts.HTML == nil || b.Message.ID != d.MessageID || b.Inbox.ID != ib {
		t.Errorf("inline %v, want %v (html %v)", b.Inline, want, b.Parts.HTML != nil)
	}
	plain := e.deliver(ib, rawMail("plain@x", "s", "just text"))
	b, err = e.app.MessageBody(e.ctx, c, ib, plain.MessageID)
	if err != nil || b.Inline != nil || b.Parts.HTML != nil || b.Parts.Text == nil {
		t.Fatalf("plain body: %+v, %v", b, err)
	}
	var text strings.Builder
	rd := b.Parts.Text.Open(e.ctx)
	_, err = io.Copy(&text, rd)
	rd.Close()
	if err != nil || !strings.Contains(text.String(), "just text") {
		t.Errorf("text %q, %v", text.String(), err)
	}
}

// The raw message streams as received; a deleted message's body and raw
// are not found.
func TestRawMessageAndDeleted(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	c := e.caller(nil, "messages:read", "messages:raw", "messages:delete")
	mail := rawMail("raw@x", "s", "the original")
	d := e.deliver(ib, mail)
	m, stream, err := e.app.RawMessage(e.ctx, c, ib, d.MessageID)
	if err != nil || m.ID != d.MessageID {
		t.Fatalf("raw: %+v, %v", m, err)
	}
	var got bytes.Buffer
	if err := stream(&got); err != nil || !strings.HasSuffix(got.String(), mail) {
		t.Errorf("raw streamed %q, %v; want it to end with the message", got.String(), err)
	}
	if err := e.app.DeleteMessage(e.ctx, c, ib, d.MessageID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.MessageBody(e.ctx, c, ib, d.MessageID); ErrorCode(err) != ENotFound {
		t.Errorf("body of a deleted message: %v", err)
	}
	if _, s, err := e.app.RawMessage(e.ctx, c, ib, d.MessageID); ErrorCode(err) != ENotFound || s != nil {
		t.Errorf("raw of a deleted message: %v", err)
	}
}

// Only a downloadable attachment streams; any other is permission_denied
// with its scan status, and one of another message is not found.
func TestAttachmentDownloadable(t *testing.T) {
	e := newEnv(t)
	ib := e.boot.Inbox.ID
	c := e.caller(nil, "messages:read")
	d := e.deliver(ib, corpus.XSSPayload{Parts: []corpus.XSSPart{
		{ContentID: "logo@x", Filename: "logo.gif"},
		{ContentID: "run@x", Filename: "run.exe", ContentType: "application/x-msdownload"},
	}}.Message("att@x"))
	other := e.deliver(ib, rawMail("other@x", "s", "b"))
	atts, err := e.db.Attachments(e.ctx, d.MessageID)
	if err != nil || len(atts) != 2 || atts[0].ScanStatus != "clean" || atts[1].ScanStatus != "suspicious" {
		t.Fatalf("attachments: %+v, %v", atts, err)
	}
	if !Downloadable(atts[0]) || Downloadable(atts[1]) {
		t.Errorf("Downloadable: %v %v", Downloadable(atts[0]), Downloadable(atts[1]))
	}
	at, stream, err := e.app.Attachment(e.ctx, c, ib, d.MessageID, atts[0].ID)
	if err != nil || at.ID != atts[0].ID {
		t.Fatalf("clean: %+v, %v", at, err)
	}
	var got bytes.Buffer
	if err := stream(&got); err != nil || got.Len() == 0 || !strings.HasPrefix(got.String(), "GIF89a") {
		t.Errorf("clean streamed %q, %v", got.String(), err)
	}
	_, stream, err = e.app.Attachment(e.ctx, c, ib, d.MessageID, atts[1].ID)
	wantError(t, err, EPermissionDenied, "")
	if m := ErrorMessage(err); m != "This attachment is not downloadable (scan_status suspicious)." || stream != nil {
		t.Errorf("suspicious: %q", m)
	}
	if _, _, err := e.app.Attachment(e.ctx, c, ib, other.MessageID, atts[0].ID); ErrorCode(err) != ENotFound {
		t.Errorf("another message's attachment: %v", err)
	}
	restricted := e.caller([]string{}, "messages:read")
	if _, _, err := e.app.Attachment(e.ctx, restricted, ib, d.MessageID, atts[0].ID); err != ErrNotFound {
		t.Errorf("outside the grant: %v", err)
	}
}
