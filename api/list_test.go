package api

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

func page(t *testing.T, e *env, token, path string) (ids []string, next string, more bool) {
	t.Helper()
	r := e.get(token, path)
	if r.status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	v := r.json(t)
	for _, d := range v["data"].([]any) {
		ids = append(ids, d.(map[string]any)["id"].(string))
	}
	if c, ok := v["next_cursor"].(string); ok {
		next = c
	}
	return ids, next, v["has_more"].(bool)
}

// A full pass over 1,000 messages with limit 7 returns each exactly once
// while new mail keeps arriving; the newcomers sort above the pass.
func TestFeedPaginationUnderArrivals(t *testing.T) {
	e := newEnv(t, Config{})
	want := map[string]bool{}
	for i := range 1000 {
		want[e.deliver(e.boot.Inbox.ID, rawMail(fmt.Sprintf("m%d@x", i), "s", "b")).MessageID] = true
	}
	seen := map[string]int{}
	path := e.path("/inboxes/%s/messages?limit=7", e.boot.Inbox.ID)
	pages := 0
	for {
		ids, next, more := page(t, e, e.admin, path)
		pages++
		for _, id := range ids {
			seen[id]++
		}
		// New mail while paging.
		e.deliver(e.boot.Inbox.ID, rawMail(fmt.Sprintf("new%d@x", pages), "s", "b"))
		if !more {
			if next != "" {
				t.Fatal("next_cursor on the last page")
			}
			break
		}
		if len(ids) != 7 {
			t.Fatalf("page %d has %d items", pages, len(ids))
		}
		path = e.path("/inboxes/%s/messages?limit=7&cursor=%s", e.boot.Inbox.ID, url.QueryEscape(next))
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("%s seen %d times", id, seen[id])
		}
	}
	for id, n := range seen {
		if !want[id] {
			t.Errorf("page showed %s, which arrived after the pass began (%d)", id, n)
		}
	}
	if pages != 143 { // ceil(1000/7)
		t.Errorf("%d pages", pages)
	}
}

func TestThreadsPaginationAndCursorBinding(t *testing.T) {
	e := newEnv(t, Config{})
	var threads []store.Delivered
	for i := range 5 {
		threads = append(threads, e.deliver(e.boot.Inbox.ID, rawMail(fmt.Sprintf("t%d@x", i), "hello world", "b")))
	}
	ids, next, more := page(t, e, e.admin, e.path("/inboxes/%s/threads?limit=2", e.boot.Inbox.ID))
	if !more || len(ids) != 2 || ids[0] != threads[4].ThreadID || ids[1] != threads[3].ThreadID {
		t.Fatalf("first page: %v more=%v", ids, more)
	}
	// A reply moves thread 0 to the top: it is seen on the next pass, by
	// design, and the rest of this pass neither repeats nor skips.
	e.deliver(e.boot.Inbox.ID, rawMail("reply@x", "re", "b", "In-Reply-To: <t0@x>\r\n"))
	ids2, _, _ := page(t, e, e.admin, e.path("/inboxes/%s/threads?limit=10&cursor=%s", e.boot.Inbox.ID, url.QueryEscape(next)))
	if strings.Join(ids2, ",") != strings.Join([]string{threads[2].ThreadID, threads[1].ThreadID}, ",") {
		t.Fatalf("second page: %v", ids2)
	}

	other, err := e.db.CreateInbox(context.Background(), e.boot.ProjectID, store.NewInbox{Address: "o@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	bad := func(name, path string) {
		t.Helper()
		r := e.get(e.admin, path)
		if r.status != 400 || string(r.body) != `{"error":{"code":"invalid_cursor","message":"Cursor is invalid, expired, or belongs to another filter.","param":"cursor"}}`+"\n" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	c := url.QueryEscape(next)
	bad("other inbox", e.path("/inboxes/%s/threads?cursor=%s", other.ID, c))
	bad("other q", e.path("/inboxes/%s/threads?q=hello&cursor=%s", e.boot.Inbox.ID, c))
	bad("other list", e.path("/inboxes/%s/messages?cursor=%s", e.boot.Inbox.ID, c))
	tampered := []byte(next)
	tampered[3] ^= 1
	bad("tampered", e.path("/inboxes/%s/threads?cursor=%s", e.boot.Inbox.ID, url.QueryEscape(string(tampered))))
	// limit is not bound.
	if r := e.get(e.admin, e.path("/inboxes/%s/threads?limit=1&cursor=%s", e.boot.Inbox.ID, c)); r.status != 200 {
		t.Errorf("cursor with another limit: %d", r.status)
	}
	e.clock.Advance(24 * time.Hour)
	bad("expired", e.path("/inboxes/%s/threads?cursor=%s", e.boot.Inbox.ID, c))
}

func TestThreadMessagesCursorBoundToThread(t *testing.T) {
	e := newEnv(t, Config{})
	a := e.deliver(e.boot.Inbox.ID, rawMail("a@x", "a", "b"))
	e.deliver(e.boot.Inbox.ID, rawMail("a2@x", "a", "b", "In-Reply-To: <a@x>\r\n"))
	b := e.deliver(e.boot.Inbox.ID, rawMail("b@x", "b", "b"))
	ids, next, more := page(t, e, e.admin, e.path("/inboxes/%s/threads/%s/messages?limit=1", e.boot.Inbox.ID, a.ThreadID))
	if len(ids) != 1 || !more {
		t.Fatalf("page: %v %v", ids, more)
	}
	r := e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages?cursor=%s", e.boot.Inbox.ID, b.ThreadID, url.QueryEscape(next)))
	if r.status != 400 || r.json(t)["error"].(map[string]any)["code"] != "invalid_cursor" {
		t.Fatalf("cursor on another thread: %d %s", r.status, r.body)
	}
	ids, next, more = page(t, e, e.admin, e.path("/inboxes/%s/threads/%s/messages?limit=1&cursor=%s", e.boot.Inbox.ID, a.ThreadID, url.QueryEscape(next)))
	if len(ids) != 1 || more || next != "" {
		t.Fatalf("last page: %v %v %q", ids, more, next)
	}
}

func TestSearch(t *testing.T) {
	e := newEnv(t, Config{})
	de := e.deliver(e.boot.Inbox.ID, rawMail("de@x", "Lieferung", "Die Lieferung der Stühle verzögert sich bis Donnerstag."))
	ja := e.deliver(e.boot.Inbox.ID, rawMail("ja@x", "会議", "明日、東京で会議があります。よろしくお願いします。"))
	ru := e.deliver(e.boot.Inbox.ID, rawMail("ru@x", "Счёт", "Пожалуйста, оплатите счёт до пятницы."))
	en := e.deliver(e.boot.Inbox.ID, rawMail("en@x", "Quarterly report", "The quarterly numbers are attached, see the summary."))
	cases := []struct {
		q    string
		want []string
	}{
		{"Stühle", []string{de.MessageID}},
		{"stühle", []string{de.MessageID}},
		{"東京", []string{ja.MessageID}},
		{"会議", []string{ja.MessageID}},
		{"пятницы", []string{ru.MessageID}},
		{"quarterly summary", []string{en.MessageID}},
		{"quarterly chairs", nil},
		{`"numbers are attached"`, []string{en.MessageID}},
		{`"attached numbers"`, nil},
		{"summ*", []string{en.MessageID}},
		{"sender@example.com", []string{en.MessageID, ru.MessageID, ja.MessageID, de.MessageID}},
		{`a AND OR NOT ( ) * : ^ -`, nil}, // FTS5 syntax is literal text, never a 500
		{"NEAR(quarterly summary)", nil},
		{"!!!", nil}, // no word in it: nothing matches, not everything
		{"* -", nil},
		{"Die\x00Lieferung", []string{de.MessageID}}, // a NUL separates words, never a 500
	}
	for _, c := range cases {
		ids, _, _ := page(t, e, e.admin, e.path("/inboxes/%s/messages?q=%s", e.boot.Inbox.ID, url.QueryEscape(c.q)))
		if strings.Join(ids, ",") != strings.Join(c.want, ",") {
			t.Errorf("q=%q: got %v, want %v", c.q, ids, c.want)
		}
	}
	ids, _, _ := page(t, e, e.admin, e.path("/inboxes/%s/threads?q=%s", e.boot.Inbox.ID, url.QueryEscape("Donnerstag")))
	if len(ids) != 1 || ids[0] != de.ThreadID {
		t.Errorf("thread search: %v", ids)
	}
	for _, q := range []string{"!!!", "Donner\x00stag"} {
		if ids, _, _ := page(t, e, e.admin, e.path("/inboxes/%s/threads?q=%s", e.boot.Inbox.ID, url.QueryEscape(q))); len(ids) != 0 {
			t.Errorf("thread search q=%q: %v, want none", q, ids)
		}
	}
	// q is ignored on the thread-messages route.
	ids, _, _ = page(t, e, e.admin, e.path("/inboxes/%s/threads/%s/messages?q=nothing", e.boot.Inbox.ID, de.ThreadID))
	if len(ids) != 1 {
		t.Errorf("q filtered the thread-messages route: %v", ids)
	}
}

// wait returns as soon as a message lands in the thread, woken by the
// commit (no sleeps, no polling).
func TestLongPoll(t *testing.T) {
	e := newEnv(t, Config{})
	root := e.deliver(e.boot.Inbox.ID, rawMail("root@x", "s", "b"))
	type result struct {
		ids []string
		dur time.Duration
	}
	got := make(chan result, 1)
	started := time.Now()
	go func() {
		ids, _, _ := page(t, e, e.admin, e.path("/inboxes/%s/threads/%s/messages?after_sequence=1&wait=30", e.boot.Inbox.ID, root.ThreadID))
		got <- result{ids, time.Since(started)}
	}()
	// An unrelated message does not answer the poll.
	e.deliver(e.boot.Inbox.ID, rawMail("other@x", "s", "b"))
	reply := e.deliver(e.boot.Inbox.ID, rawMail("reply@x", "s", "b", "In-Reply-To: <root@x>\r\n"))
	res := <-got
	if len(res.ids) != 1 || res.ids[0] != reply.MessageID {
		t.Fatalf("long-poll answered %v", res.ids)
	}
	if res.dur > 10*time.Second {
		t.Errorf("long-poll took %v", res.dur)
	}
	// Nothing new: an empty page at the deadline.
	ids, _, more := page(t, e, e.admin, e.path("/inboxes/%s/threads/%s/messages?after_sequence=2&wait=1", e.boot.Inbox.ID, root.ThreadID))
	if len(ids) != 0 || more {
		t.Errorf("empty poll: %v", ids)
	}
	if r := e.get(e.admin, e.path("/inboxes/%s/threads/%s/messages?wait=61", e.boot.Inbox.ID, root.ThreadID)); r.status != 400 {
		t.Errorf("wait=61: %d", r.status)
	}
}
