package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// --max-messages reaches the store: a server restarted with it prunes at
// start what is beyond each inbox's newest (its round's log line says so),
// and the pruned message is gone from the API — its list, its thread, its
// own route and search — while the ones kept stay whole.
func TestMaxMessagesPrunesThroughTheServer(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data)
	for i := range 3 {
		raw := fmt.Sprintf("From: ann@example.com\r\nMessage-ID: <keep%d@example.com>\r\nSubject: mail %d\r\n\r\nword%d shared\r\n", i, i, i)
		if err := sendMail(s.smtp, "ann@example.com", []string{"inbox@localhost"}, raw); err != nil {
			t.Fatal(err)
		}
	}
	c, project, inbox := adminAPI(t, data, s.http)
	base := "/v1/projects/" + project + "/inboxes/" + inbox
	type page struct {
		Data []struct {
			ID, Subject  string
			ThreadID     string `json:"thread_id"`
			MessageCount int    `json:"message_count"`
		}
	}
	get := func(path string) (page, error) {
		var p page
		err := c.do(context.Background(), "GET", path, nil, "", &p)
		return p, err
	}
	before, err := get(base + "/messages")
	if err != nil || len(before.Data) != 3 {
		t.Fatalf("before: %+v %v", before, err)
	}
	oldest := before.Data[2] // newest first
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	s = startServer(t, data, "--max-messages", "2")
	s.stderr.await(t, `msg=retention messages=1 `)
	c, _, _ = adminAPI(t, data, s.http)
	after, err := get(base + "/messages")
	if err != nil || len(after.Data) != 2 || after.Data[0].ID != before.Data[0].ID || after.Data[1].ID != before.Data[1].ID {
		t.Fatalf("after: %+v %v, want the two newest of %+v", after, err, before)
	}
	notFound := func(err error) bool { return err != nil && strings.Contains(err.Error(), "404 Not Found") }
	if _, err := get(base + "/messages/" + oldest.ID); !notFound(err) {
		t.Errorf("the pruned message's route: %v", err)
	}
	if _, err := get(base + "/threads/" + oldest.ThreadID + "/messages"); !notFound(err) {
		t.Errorf("the pruned message's thread (now empty): %v", err)
	}
	if p, err := get(base + "/messages?q=word0"); err != nil || len(p.Data) != 0 {
		t.Errorf("search for the pruned message: %+v %v", p, err)
	}
	if p, err := get(base + "/messages?q=shared"); err != nil || len(p.Data) != 2 {
		t.Errorf("search for every message: %+v %v", p, err)
	}
	threads, err := get(base + "/threads")
	if err != nil || len(threads.Data) != 2 {
		t.Fatalf("threads: %+v %v", threads, err)
	}
	for _, th := range threads.Data {
		if th.MessageCount != 1 {
			t.Errorf("thread %q counts %d messages, want 1", th.Subject, th.MessageCount)
		}
	}
}
