package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Both search strategies (collect-and-sort for few matches, walk newest
// first for many) answer the same pages.
func TestSearchStrategiesAgree(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	for i := range 40 {
		word := []string{"alpha", "beta", "gamma"}[i%3]
		irt := ""
		if i >= 10 {
			irt = fmt.Sprintf("In-Reply-To: <s%d@x>\r\n", i%10)
		}
		raw := fmt.Sprintf("Message-ID: <s%d@x>\r\n%sSubject: n%d\r\n\r\n%s common text %d\r\n", i, irt, i, word, i)
		in := incoming(b.Inbox.ID, raw)
		in.ReceivedAt = in.ReceivedAt.Add(timeOffset(i))
		if _, err := db.Ingest(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	run := func(probe int, text string) (threads, msgs []string) {
		db.searchProbe = probe
		q, err := ParseQuery(text)
		if err != nil {
			t.Fatal(err)
		}
		var after *TimeKey
		for {
			page, err := db.ListThreads(ctx, b.Inbox.ID, q, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, th := range page {
				threads = append(threads, th.ID)
			}
			if len(page) < 3 {
				break
			}
			last := page[len(page)-1]
			after = &TimeKey{At: last.LastMessageAt.UnixMilli(), ID: last.ID}
		}
		after = nil
		for {
			page, err := db.InboxPage(ctx, b.Inbox.ID, q, "", after, 4)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page {
				msgs = append(msgs, m.ID)
			}
			if len(page) < 4 {
				break
			}
			last := page[len(page)-1]
			after = &TimeKey{At: last.CreatedAt.UnixMilli(), ID: last.ID}
		}
		return
	}
	for _, text := range []string{"alpha", "common", "gamma text", "nothing", "n0"} { // n0: the oldest thread only
		t1, m1 := run(1, text)     // every term counts as common: walk
		t2, m2 := run(1<<30, text) // every term counts as rare: collect
		if !slices.Equal(t1, t2) || !slices.Equal(m1, m2) {
			t.Errorf("%q: walk %v/%v, collect %v/%v", text, t1, m1, t2, m2)
		}
		t3 := func() []string {
			defer func(n int) { walkBatchMin = n }(walkBatchMin)
			walkBatchMin = 1 // a walk of pages of 3 tests 6 threads at a time
			t3, _ := run(1, text)
			return t3
		}()
		if !slices.Equal(t3, t2) {
			t.Errorf("%q: walk in small batches %v, collect %v", text, t3, t2)
		}
		if text == "common" && (len(m1) != 40 || len(t1) != 10) {
			t.Errorf("common: %d messages in %d threads", len(m1), len(t1))
		}
	}
}

func timeOffset(i int) time.Duration { return time.Duration(i) * time.Second }

// ParseQuery refuses what it cannot search: unbalanced quotes, and text
// that is not UTF-8 (every indexed text is).
func TestParseQueryRefuses(t *testing.T) {
	for text, want := range map[string]error{
		`"open`:         ErrBadQuery,
		"東京\xff":        ErrQueryNotUTF8,
		"caf\xe9":       ErrQueryNotUTF8,
		`"東京" café ok*`: nil,
	} {
		if _, err := ParseQuery(text); err != want {
			t.Errorf("ParseQuery(%q) = %v, want %v", text, err, want)
		}
	}
}
