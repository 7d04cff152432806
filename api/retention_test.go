package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

// --retention through the API, with the fake clock: after a retention
// round of the writer, every message older than the window is gone from
// every route (lists, threads, the message, its body, raw bytes and
// attachment, search) and nothing younger is touched; the thread that
// keeps a young reply counts only it, the one left empty is gone.
func TestRetentionThroughTheAPI(t *testing.T) {
	e := newEnv(t, Config{}, func(o *store.Options) { o.Retention = 30 * 24 * time.Hour })
	ib := e.boot.Inbox.ID
	root := e.deliver(ib, rawMail("root@example.com", "Kept thread", "oldword root"))
	old := e.deliver(ib, rawMail("old@example.com", "Old alone", "oldword alone",
		"Content-Type: multipart/mixed; boundary=b\r\n")+"--b\r\nContent-Type: text/plain\r\n\r\noldword alone\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\nAAAA\r\n--b--\r\n")
	m := e.get(e.admin, e.path("/inboxes/%s/messages/%s", ib, old.MessageID)).json(t)
	atts, _ := m["attachments"].([]any)
	if len(atts) != 1 {
		t.Fatalf("the old message's attachments: %v", m["attachments"])
	}
	att := atts[0].(map[string]any)["id"].(string)
	if r := e.get(e.admin, e.path("/inboxes/%s/messages?q=oldword", ib)); len(r.json(t)["data"].([]any)) != 2 {
		t.Fatalf("search oldword before retention: %s", r.body)
	}
	e.clock.Advance(40 * 24 * time.Hour)
	reply := e.deliver(ib, rawMail("reply@example.com", "Re: Kept thread", "youngword reply", "In-Reply-To: <root@example.com>\r\n"))
	young := e.deliver(ib, rawMail("young@example.com", "Young", "youngword alone"))
	if reply.ThreadID != root.ThreadID {
		t.Fatal("the reply did not join its thread")
	}

	p, err := e.db.PruneNow(context.Background())
	if err != nil || p.Messages != 2 {
		t.Fatalf("the round pruned %+v (%v), want the 2 old messages", p, err)
	}

	ids := func(r response) []string {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var out []string
		for _, d := range r.json(t)["data"].([]any) {
			out = append(out, d.(map[string]any)["id"].(string))
		}
		return out
	}
	same := func(what string, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: %v, want %v", what, got, want)
				return
			}
		}
	}
	same("messages", ids(e.get(e.admin, e.path("/inboxes/%s/messages", ib))), young.MessageID, reply.MessageID)
	same("search oldword", ids(e.get(e.admin, e.path("/inboxes/%s/messages?q=oldword", ib))))
	same("search youngword", ids(e.get(e.admin, e.path("/inboxes/%s/messages?q=youngword", ib))), young.MessageID, reply.MessageID)
	same("threads searched", ids(e.get(e.admin, e.path("/inboxes/%s/threads?q=oldword", ib))))
	same("threads", ids(e.get(e.admin, e.path("/inboxes/%s/threads", ib))), young.ThreadID, root.ThreadID)
	same("the kept thread's messages", ids(e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages", ib, root.ThreadID))), reply.MessageID)
	th := e.get(e.admin, e.path("/inboxes/%s/threads/%s", ib, root.ThreadID)).json(t)
	if th["message_count"] != 1.0 {
		t.Errorf("the kept thread: %v", th)
	}
	for _, p := range []string{
		e.path("/inboxes/%s/threads/%s", ib, old.ThreadID),
		e.path("/inboxes/%s/messages/%s", ib, root.MessageID),
		e.path("/inboxes/%s/messages/%s", ib, old.MessageID),
		e.path("/inboxes/%s/messages/%s/body", ib, old.MessageID),
		e.path("/inboxes/%s/messages/%s/raw", ib, old.MessageID),
		e.path("/inboxes/%s/messages/%s/attachments/%s", ib, old.MessageID, att),
	} {
		if r := e.get(e.admin, p); r.status != http.StatusNotFound {
			t.Errorf("%s after retention: %d %s", p, r.status, r.body)
		}
	}
	for _, p := range []string{
		e.path("/inboxes/%s/messages/%s/body", ib, reply.MessageID),
		e.path("/inboxes/%s/messages/%s/raw", ib, young.MessageID),
	} {
		if r := e.get(e.admin, p); r.status != http.StatusOK {
			t.Errorf("%s (young): %d %s", p, r.status, r.body)
		}
	}
}
