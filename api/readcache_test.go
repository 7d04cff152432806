package api

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

// Pages and keys served from memory are exactly as fresh as the database:
// any commit, by this process or another one, retires them; and a cached
// page never widens a key's grant or scopes.
func TestReadCacheFollowsTheDatabase(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, rawMail("c1@example.com", "cached", "first"))
	page := e.path("/inboxes/%s/threads/%s/messages", ib, d.ThreadID)
	count := func(token string) int {
		t.Helper()
		r := e.get(token, page)
		if r.status != 200 {
			t.Fatalf("GET page: %d %s", r.status, r.body)
		}
		return len(r.json(t)["data"].([]any))
	}
	for range 2 { // the second from the cache
		if n := count(e.admin); n != 1 {
			t.Fatalf("%d messages, want 1", n)
		}
	}

	// This process commits: a reply lands in the thread.
	e.deliver(ib, rawMail("c2@example.com", "Re: cached", "second", "In-Reply-To: <c1@example.com>\r\n"))
	if n := count(e.admin); n != 2 {
		t.Errorf("after a reply: %d messages, want 2", n)
	}

	// Another process commits (the CLI, or sqlite3 on the file): the first
	// message is deleted behind the server's back.
	other, err := sql.Open("sqlite", e.dbPath+"?_pragma=busy_timeout(10000)") // the writer may hold the lock a moment
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`UPDATE messages SET deleted_at = 1 WHERE id = ?`, d.MessageID); err != nil {
		t.Fatal(err)
	}
	if n := count(e.admin); n != 1 {
		t.Errorf("after another process deleted a message: %d messages, want 1", n)
	}

	// A key restricted to another inbox does not get the cached page.
	b, err := e.db.CreateInbox(ctx, e.boot.ProjectID, store.NewInbox{Address: "b@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	onlyB := e.key(store.AllScopes(), []string{b.ID})
	count(e.admin) // cached at the version after the key was made
	if r := e.get(onlyB, page); r.status != 404 || string(r.body) != notFoundBody {
		t.Errorf("a key for inbox B asked for A's cached page: %d %s", r.status, r.body)
	}
	// Nor a key without the scope.
	threadsOnly := e.key([]string{"threads:read"}, nil)
	count(e.admin)
	if r := e.get(threadsOnly, page); r.status != 403 || r.json(t)["error"].(map[string]any)["code"] != "permission_denied" {
		t.Errorf("a key without messages:read asked for a cached page: %d %s", r.status, r.body)
	}

	// A key revoked by another process fails at its next request.
	k, token, err := e.db.CreateKey(ctx, e.boot.ProjectID, "cached", store.AllScopes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	count(token)
	if _, err := other.Exec(`UPDATE api_keys SET revoked_at = 1 WHERE id = ?`, k.ID); err != nil {
		t.Fatal(err)
	}
	if r := e.get(token, page); r.status != 401 {
		t.Errorf("a key revoked by another process: %d %s", r.status, r.body)
	}
}

// A page asked for with a cursor is not served from the cache: the cursor
// expires at its own time, which a cached page would outlive.
func TestReadCacheChecksEveryCursor(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, rawMail("k1@example.com", "paged", "one"))
	e.deliver(ib, rawMail("k2@example.com", "Re: paged", "two", "In-Reply-To: <k1@example.com>\r\n"))
	first := e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages?limit=1", ib, d.ThreadID)).json(t)
	cursor, _ := first["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("no next_cursor: %v", first)
	}
	page := e.path("/inboxes/%s/threads/%s/messages?limit=1&cursor=%s", ib, d.ThreadID, url.QueryEscape(cursor))
	e.clock.Advance(cursorTTL - 10*time.Second)
	if r := e.get(e.admin, page); r.status != 200 {
		t.Fatalf("cursor before its expiry: %d %s", r.status, r.body)
	}
	e.clock.Advance(20 * time.Second) // past the expiry; within a cache entry's life
	if r := e.get(e.admin, page); r.status != 400 || r.json(t)["error"].(map[string]any)["code"] != "invalid_cursor" {
		t.Errorf("expired cursor: %d %s", r.status, r.body)
	}
}

// A long-poll answered by the thread's first message with an attachment
// shows the attachment.
func TestLongPollShowsNewAttachments(t *testing.T) {
	waiting := make(chan struct{}, 1)
	e := newEnvWith(t, Config{}, app.Config{PollWaiting: func() {
		select {
		case waiting <- struct{}{}:
		default: // woken again by another commit: already signalled
		}
	}})
	ib := e.boot.Inbox.ID
	root := e.deliver(ib, rawMail("plain@x", "s", "no files"))
	got := make(chan response, 1)
	go func() {
		got <- e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages?after_sequence=1&wait=30", ib, root.ThreadID))
	}()
	<-waiting // the thread row is read: the reply comes after it
	e.deliver(ib, rawMail("files@x", "s", withPDF, multipartHeader, "In-Reply-To: <plain@x>\r\n"))
	r := <-got
	data := r.json(t)["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("long-poll answered %d messages: %s", len(data), r.body)
	}
	if atts := data[0].(map[string]any)["attachments"].([]any); len(atts) != 1 {
		t.Errorf("the reply's attachments: %v, want the PDF", atts)
	}
}
