package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

func (e *env) sendReq(token, inboxID, idemKey, body string) response {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+e.path("/inboxes/%s/messages", inboxID), strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *env) outboundCount(inboxID string) int {
	e.t.Helper()
	msgs, err := e.db.InboxMessages(context.Background(), inboxID)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if m.Direction == "outbound" {
			n++
		}
	}
	return n
}

func TestSendAndRead(t *testing.T) {
	e := newEnv(t, Config{})
	r := e.sendReq(e.admin, e.boot.Inbox.ID, "", `{"to":["Ann <ann@example.com>",{"email":"bob@example.com","name":"Bob"}],"subject":"Hi","text":"Hello",
		"attachments":[{"filename":"a.txt","content_type":"text/plain","content_base64":"aGVsbG8="}],"headers":{"X-Campaign":"q4"}}`)
	if r.status != 202 {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	v := r.json(t)
	if v["result"] != "queued" || !strings.HasPrefix(v["message_id"].(string), "msg_") {
		t.Fatalf("answer: %s", r.body)
	}
	m := e.get(e.admin, e.path("/inboxes/%s/messages/%s", e.boot.Inbox.ID, v["message_id"])).json(t)
	if m["direction"] != "outbound" || m["state"] != "captured" || m["from"].(map[string]any)["email"] != "inbox@localhost" ||
		len(m["recipients"].([]any)) != 2 || m["recipients"].([]any)[0].(map[string]any)["delivery_status"] != "captured" ||
		len(m["attachments"].([]any)) != 1 {
		t.Fatalf("outbound message: %v", m)
	}
	th := e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages", e.boot.Inbox.ID, v["thread_id"])).json(t)["data"].([]any)
	if th[0].(map[string]any)["delivery_status"] != "captured" || th[0].(map[string]any)["thread_match"] != "new" {
		t.Fatalf("thread message: %v", th[0])
	}
	raw := e.get(e.admin, e.path("/inboxes/%s/messages/%s/raw", e.boot.Inbox.ID, v["message_id"]))
	if raw.status != 200 || !bytes.Contains(raw.body, []byte("X-Campaign: q4")) || !bytes.Contains(raw.body, []byte("Message-Id: <")) && !bytes.Contains(raw.body, []byte("Message-ID: <")) {
		t.Fatalf("raw: %d %s", raw.status, raw.body)
	}
}

func TestSendBadInputStoresNothing(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	other, _ := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "other@localhost"})
	foreign := e.deliver(other.ID, rawMail("f@x", "foreign", "b"))
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf(`"r%d@example.com"`, i)
	}
	cases := []struct {
		name, body  string
		status      int
		code, param string
	}{
		{"injection in subject", `{"to":["a@b.c"],"subject":"x\r\nBcc: v@x","text":"t"}`, 400, "invalid_request", "subject"},
		{"injection in name", `{"to":[{"email":"a@b.c","name":"A\nBcc: v@x"}],"text":"t"}`, 400, "invalid_request", "to[0].name"},
		{"injection in header", `{"to":["a@b.c"],"headers":{"X-A":"b\r\nBcc: v@x"}}`, 400, "invalid_request", "headers.X-A"},
		{"structural header", `{"to":["a@b.c"],"headers":{"Message-ID":"<x@y>"}}`, 400, "invalid_request", "headers.Message-ID"},
		{"10000 recipients", `{"to":[` + strings.Join(many, ",") + `],"text":"t"}`, 400, "invalid_request", "to"},
		{"bad base64", `{"to":["a@b.c"],"attachments":[{"filename":"a","content_base64":"!!!"}]}`, 400, "invalid_request", "attachments[0].content_base64"},
		{"unknown field", `{"to":["a@b.c"],"from":"ceo@x"}`, 400, "invalid_request", "from"},
		{"wrong type", `{"to":"a@b.c"}`, 400, "invalid_request", "to"},
		{"address of the wrong type", `{"to":[5],"text":"t"}`, 400, "invalid_request", "to[0]"},
		{"address with an unknown field", `{"to":["a@b.c"],"reply_to":[{"email":"a@b.com","nam":"x"}],"text":"t"}`, 400, "invalid_request", "reply_to[0]"},
		{"header of the wrong type", `{"to":["a@b.c"],"headers":{"X-A":"b","X-B":5},"text":"t"}`, 400, "invalid_request", "headers.X-B"},
		{"attachment field of the wrong type", `{"to":["a@b.c"],"attachments":[{"filename":"a","content_base64":""},{"filename":5}]}`, 400, "invalid_request", "attachments[1].filename"},
		{"attachment with an unknown field", `{"to":["a@b.c"],"attachments":[{"filename":"a","Content_Type":"text/plain","size":1}]}`, 400, "invalid_request", "attachments[0].size"},
		{"no recipients", `{"text":"t"}`, 400, "invalid_request", "to"},
		{"parent in another inbox", `{"reply_to_message_id":"` + foreign.MessageID + `","text":"t"}`, 404, "not_found", "reply_to_message_id"},
		{"parent that does not exist", `{"reply_to_message_id":"msg_nope","text":"t"}`, 404, "not_found", "reply_to_message_id"},
	}
	for _, c := range cases {
		r := e.sendReq(e.admin, e.boot.Inbox.ID, "", c.body)
		if r.status != c.status {
			t.Errorf("%s: %d %s", c.name, r.status, r.body)
			continue
		}
		er := r.json(t)["error"].(map[string]any)
		if er["code"] != c.code || (c.param != "" && er["param"] != c.param) {
			t.Errorf("%s: %s", c.name, r.body)
		}
	}
	if n := e.outboundCount(e.boot.Inbox.ID); n != 0 {
		t.Fatalf("%d messages stored by bad requests", n)
	}
}

func TestIdempotency(t *testing.T) {
	e := newEnv(t, Config{})
	body := `{"to":["a@example.com"],"subject":"once","text":"only once"}`
	// 50 concurrent identical requests: exactly one send; every answer is
	// the stored body or 503.
	const n = 50
	var wg sync.WaitGroup
	answers := make([]response, n)
	for i := range n {
		wg.Go(func() { answers[i] = e.sendReq(e.admin, e.boot.Inbox.ID, "order-42", body) })
	}
	wg.Wait()
	var first []byte
	for i, a := range answers {
		switch a.status {
		case 202:
			if first == nil {
				first = a.body
			} else if !bytes.Equal(first, a.body) {
				t.Fatalf("answer %d differs:\n%s\n%s", i, first, a.body)
			}
		case 503:
			if a.json(t)["error"].(map[string]any)["message"] != "A matching send is already in progress." {
				t.Fatalf("503 body: %s", a.body)
			}
		default:
			t.Fatalf("answer %d: %d %s", i, a.status, a.body)
		}
	}
	if n := e.outboundCount(e.boot.Inbox.ID); n != 1 {
		t.Fatalf("%d messages sent", n)
	}
	// A replay, with the key order and spacing changed: byte-identical.
	r := e.sendReq(e.admin, e.boot.Inbox.ID, "order-42", `{ "text":"only once", "subject":"once", "to":["a@example.com"] }`)
	if r.status != 202 || r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, first) {
		t.Fatalf("replay: %d %v %s", r.status, r.header, r.body)
	}
	r = e.sendReq(e.admin, e.boot.Inbox.ID, "order-42", `{"to":["a@example.com"],"subject":"once","text":"changed"}`)
	if r.status != 409 || r.json(t)["error"].(map[string]any)["code"] != "idempotency_conflict" {
		t.Fatalf("changed body: %d %s", r.status, r.body)
	}
	// Validation failures do not consume a key.
	if r := e.sendReq(e.admin, e.boot.Inbox.ID, "fresh", `{"text":"no recipient"}`); r.status != 400 {
		t.Fatalf("invalid: %d", r.status)
	}
	if r := e.sendReq(e.admin, e.boot.Inbox.ID, "fresh", body); r.status != 202 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("key after a failed validation: %d %s", r.status, r.body)
	}
	for _, bad := range []string{"has space", strings.Repeat("k", 257)} {
		if r := e.sendReq(e.admin, e.boot.Inbox.ID, bad, body); r.status != 400 {
			t.Errorf("key %q: %d", bad, r.status)
		}
	}
	// After 30 days the key is expired.
	e.clock.Advance(30*24*time.Hour + time.Second)
	r = e.sendReq(e.admin, e.boot.Inbox.ID, "order-42", body)
	if r.status != 422 || r.json(t)["error"].(map[string]any)["code"] != "idempotency_expired" {
		t.Fatalf("expired: %d %s", r.status, r.body)
	}
}

// A repeat answers as the first send did even when the request would no
// longer be valid: a reply whose parent was deleted since still replays,
// and an expired key is idempotency_expired, not the validation's error.
func TestIdempotentReplayIsNotValidatedAgain(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	parent := e.deliver(ib, rawMail("parent@x", "Question", "Can you?"))
	body := `{"reply_to_message_id":"` + parent.MessageID + `","text":"Yes."}`
	first := e.sendReq(e.admin, ib, "reply-1", body)
	if first.status != 202 {
		t.Fatalf("reply: %d %s", first.status, first.body)
	}
	if r := e.do(e.admin, "DELETE", e.path("/inboxes/%s/messages/%s", ib, parent.MessageID), ""); r.status != 200 {
		t.Fatalf("delete parent: %d %s", r.status, r.body)
	}
	r := e.sendReq(e.admin, ib, "reply-1", body)
	if r.status != 202 || r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, first.body) {
		t.Fatalf("replay after the parent's deletion: %d %v %s", r.status, r.header, r.body)
	}
	if n := e.outboundCount(ib); n != 1 {
		t.Fatalf("%d messages sent", n)
	}
	e.clock.Advance(30*24*time.Hour + time.Second)
	r = e.sendReq(e.admin, ib, "reply-1", body)
	if r.status != 422 || r.json(t)["error"].(map[string]any)["code"] != "idempotency_expired" {
		t.Fatalf("expired: %d %s", r.status, r.body)
	}
}

func TestApprovalGate(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	if r := e.do(e.admin, "PATCH", e.path("/inboxes/%s", ib), `{"send_policy":"approve_external","allowed_domains":["Partner.EXAMPLE"]}`); r.status != 200 || !strings.Contains(string(r.body), `"allowed_domains":["partner.example"]`) {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	agent := e.key([]string{"messages:send", "messages:read", "approvals:read"}, nil)
	approver := e.key([]string{"approvals:read", "approvals:write", "messages:raw", "messages:read"}, nil)

	// Allowed domain and local inboxes pass.
	if r := e.sendReq(agent, ib, "", `{"to":["x@partner.example"],"text":"ok"}`); r.json(t)["result"] != "queued" {
		t.Fatalf("allowed domain: %s", r.body)
	}
	if r := e.sendReq(agent, ib, "", `{"to":["y@PARTNER.example"],"text":"ok"}`); r.json(t)["result"] != "queued" {
		t.Fatalf("allowed domain in capitals: %s", r.body)
	}
	r := e.sendReq(agent, ib, "k1", `{"to":["ceo@bigcorp.example"],"subject":"Deal","text":"Sign here"}`)
	held := r.json(t)
	if r.status != 202 || held["result"] != "approval_required" || !strings.HasPrefix(held["approval_id"].(string), "apr_") {
		t.Fatalf("held: %d %s", r.status, r.body)
	}
	before := e.outboundCount(ib)
	apr := e.path("/inboxes/%s/approvals/%s", ib, held["approval_id"])
	if r := e.do(agent, "POST", apr+"/approve", ""); r.status != 403 {
		t.Fatalf("agent approved its own draft: %d", r.status)
	}
	a := e.get(agent, apr).json(t)
	if a["status"] != "pending" || a["draft"].(map[string]any)["subject"] != "Deal" || a["message_id"] != nil {
		t.Fatalf("pending approval: %v", a)
	}
	// approve takes no body: one that is not empty or {} is a 400, and
	// decides nothing; a key that may not approve is told that first.
	for _, body := range []string{"not json", `{"reason":"ok"}`} {
		if r := e.do(approver, "POST", apr+"/approve", body); r.status != 400 {
			t.Fatalf("approve with the body %s: %d %s", body, r.status, r.body)
		}
		if r := e.do(agent, "POST", apr+"/approve", body); r.status != 403 {
			t.Fatalf("approve by the agent with the body %s: %d %s", body, r.status, r.body)
		}
	}
	// A body of whitespace, sent chunked (no Content-Length), is no body.
	req, err := http.NewRequest("POST", e.srv.URL+apr+"/approve", io.MultiReader(strings.NewReader(" \r\n")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+approver)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("approve with a chunked body of whitespace: %d", resp.StatusCode)
	}
	r = e.get(approver, apr)
	if r.status != 200 {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	a = r.json(t)
	if a["status"] != "approved" || a["message_id"] == nil || a["decided_by"] == nil {
		t.Fatalf("approved: %v", a)
	}
	if e.outboundCount(ib) != before+1 {
		t.Fatal("approval queued nothing")
	}
	if r := e.do(approver, "POST", apr+"/approve", "{}"); r.status != 409 { // {} is no body: the decision is what is refused
		t.Fatalf("second decision: %d", r.status)
	}
	// The exact drafted bytes went out.
	var draftRaw []byte
	ap, err := e.db.GetApproval(context.Background(), ib, held["approval_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	draftRaw = ap.Raw
	sent := e.get(approver, e.path("/inboxes/%s/messages/%s/raw", ib, a["message_id"]))
	if !bytes.Equal(sent.body, draftRaw) {
		t.Fatalf("sent bytes differ from the draft")
	}
	// Replaying the original key still answers approval_required.
	if r := e.sendReq(agent, ib, "k1", `{"to":["ceo@bigcorp.example"],"subject":"Deal","text":"Sign here"}`); r.json(t)["result"] != "approval_required" {
		t.Fatalf("replay after approval: %s", r.body)
	}

	// Reject: nothing queued.
	held2 := e.sendReq(agent, ib, "", `{"to":["ceo@bigcorp.example"],"text":"again"}`).json(t)
	n := e.outboundCount(ib)
	r = e.do(approver, "POST", e.path("/inboxes/%s/approvals/%s/reject", ib, held2["approval_id"]), `{"reason":"no"}`)
	if r.status != 200 || r.json(t)["status"] != "rejected" || r.json(t)["reason"] != "no" {
		t.Fatalf("reject: %d %s", r.status, r.body)
	}
	if e.outboundCount(ib) != n {
		t.Fatal("rejection queued a message")
	}
	list := e.get(approver, e.path("/inboxes/%s/approvals", ib)).json(t)["data"].([]any)
	if len(list) != 2 {
		t.Fatalf("approvals list: %v", list)
	}
	var got map[string]any
	json.Unmarshal(e.get(approver, apr).body, &got)
	if got["status"] != "approved" {
		t.Fatalf("approval after all: %v", got)
	}
}

// An approver sees every part of the draft that will be sent: a Reply-To
// and custom headers steer the replies as much as the recipients do.
func TestApprovalDraftShowsReplyToAndHeaders(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	if r := e.do(e.admin, "PATCH", e.path("/inboxes/%s", ib), `{"send_policy":"approve_all"}`); r.status != 200 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	held := e.sendReq(e.admin, ib, "", `{"to":["ceo@bigcorp.example"],"reply_to":[{"email":"replies@elsewhere.example","name":"Elsewhere"}],`+
		`"text":"hi","headers":{"x-campaign":"q4","X-Greeting":"grüß dich","List-Unsubscribe":"<mailto:u@elsewhere.example>"}}`).json(t)
	var got struct {
		Draft struct {
			ReplyTo []map[string]any  `json:"reply_to"`
			Headers map[string]string `json:"headers"`
		} `json:"draft"`
	}
	if err := json.Unmarshal(e.get(e.admin, e.path("/inboxes/%s/approvals/%s", ib, held["approval_id"])).body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Draft.ReplyTo) != 1 || got.Draft.ReplyTo[0]["email"] != "replies@elsewhere.example" || got.Draft.ReplyTo[0]["name"] != "Elsewhere" {
		t.Errorf("reply_to = %v", got.Draft.ReplyTo)
	}
	want := map[string]string{"X-Campaign": "q4", "X-Greeting": "grüß dich", "List-Unsubscribe": "<mailto:u@elsewhere.example>"} // decoded, as a reader shows it
	if !maps.Equal(got.Draft.Headers, want) {
		t.Errorf("headers = %v, want %v", got.Draft.Headers, want)
	}
	// A draft without either shows them empty, not null.
	held = e.sendReq(e.admin, ib, "", `{"to":["ceo@bigcorp.example"],"text":"hi"}`).json(t)
	if r := e.get(e.admin, e.path("/inboxes/%s/approvals/%s", ib, held["approval_id"])); !strings.Contains(string(r.body), `"reply_to":[]`) || !strings.Contains(string(r.body), `"headers":{}`) {
		t.Errorf("plain draft: %s", r.body)
	}
}

// A reply takes its defaults from what the parent's sender wrote, which
// the caller cannot fix: a subject or display name with an encoded line
// break is sent on one line, not refused; a Reply-To that is no address
// is refused without quoting it (an agent reads the error).
func TestReplyDefaultsFromABadlyWrittenParent(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	parent := e.deliver(ib, rawMail("p1@example.com", "=?utf-8?q?Order=0AInjected?=", "hi",
		"Reply-To: =?utf-8?q?Mallory=0D=0ABcc:_x?= <m@evil.example>\r\n"))
	r := e.sendReq(e.admin, ib, "", `{"reply_to_message_id":"`+parent.MessageID+`","text":"Yes."}`)
	if r.status != 202 {
		t.Fatalf("reply: %d %s", r.status, r.body)
	}
	m := e.get(e.admin, e.path("/inboxes/%s/messages/%s", ib, r.json(t)["message_id"])).json(t)
	to := m["to"].([]any)[0].(map[string]any)
	if m["subject"] != "Re: Order Injected" || to["email"] != "m@evil.example" || to["name"] != "Mallory  Bcc: x" {
		t.Errorf("reply: subject %q, to %v", m["subject"], to)
	}

	parent = e.deliver(ib, rawMail("p2@example.com", "Hi", "hi", "Reply-To: run-this-now@and@evil.example\r\n"))
	r = e.sendReq(e.admin, ib, "", `{"reply_to_message_id":"`+parent.MessageID+`","text":"Yes."}`)
	if code, param := errParam(t, r); r.status != 400 || code != "invalid_request" || param != "to" || strings.Contains(string(r.body), "run-this") {
		t.Errorf("reply to no address: %d %s", r.status, r.body)
	}
}

// A reply to a message that came without a Message-ID has no id to put in
// In-Reply-To: the generated one is the gateway's own and means nothing
// to the recipient. It keeps the parent's References and its thread.
func TestReplyToAMessageWithoutMessageID(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	parent := e.deliver(ib, "From: Sender <sender@example.com>\r\nTo: inbox@localhost\r\nSubject: No id\r\nReferences: <root@example.com>\r\n\r\nhi\r\n")
	r := e.sendReq(e.admin, ib, "", `{"reply_to_message_id":"`+parent.MessageID+`","text":"Yes."}`)
	if r.status != 202 {
		t.Fatalf("reply: %d %s", r.status, r.body)
	}
	if r.json(t)["thread_id"] != parent.ThreadID {
		t.Errorf("the reply left the parent's thread: %s", r.body)
	}
	raw := string(e.get(e.admin, e.path("/inboxes/%s/messages/%s/raw", ib, r.json(t)["message_id"])).body)
	if strings.Contains(raw, "inboxd.invalid") || strings.Contains(raw, "In-Reply-To:") || !strings.Contains(raw, "References: <root@example.com>\r\n") {
		t.Errorf("reply headers:\n%s", raw)
	}
}
