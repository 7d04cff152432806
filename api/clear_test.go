package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/inboxd/inboxd/store"
)

// DELETE /inboxes/{id}/messages (SPEC §13) clears an inbox: its messages
// leave the feed and the thread list, and answer not_found; a key whose
// grant does not hold the inbox gets not_found, as for a missing one.
func TestDeleteInboxMessagesRoute(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, rawMail("c1@example.com", "One", "1"))
	e.deliver(ib, rawMail("c2@example.com", "Two", "2"))
	other, err := e.db.CreateInbox(context.Background(), e.boot.ProjectID, store.NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	_, elsewhere, err := e.db.CreateKey(context.Background(), e.boot.ProjectID, "k", []string{"messages:delete"}, []string{other.ID})
	if err != nil {
		t.Fatal(err)
	}
	if r := e.do(elsewhere, "DELETE", e.path("/inboxes/%s/messages", ib), ""); r.status != http.StatusNotFound {
		t.Errorf("outside the grant: %d %s", r.status, r.body)
	}
	r := e.do(e.admin, "DELETE", e.path("/inboxes/%s/messages", ib), "")
	if got := r.json(t); r.status != http.StatusOK || got["inbox_id"] != ib || got["deleted_count"] != 2.0 {
		t.Fatalf("clear: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/inboxes/%s/messages", "/inboxes/%s/threads"} {
		if r := e.get(e.admin, e.path(p, ib)); r.status != http.StatusOK || string(r.body) != `{"data":[],"next_cursor":null,"has_more":false}`+"\n" {
			t.Errorf("%s after the clear: %d %s", p, r.status, r.body)
		}
	}
	if r := e.get(e.admin, e.path("/inboxes/%s/messages/%s/body", ib, d.MessageID)); r.status != http.StatusNotFound {
		t.Errorf("a cleared message's body: %d %s", r.status, r.body)
	}
}
