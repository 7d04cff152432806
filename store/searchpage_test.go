package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The search pages of a large inbox, paged by their cursors at several
// page sizes, are exactly the inbox's matching messages (and threads) in
// the list's order: complete, without overlap, and without another
// inbox's matches. The messages arrive out of created_at order and many
// share a millisecond, so the key order (searchindex.go) is not enough
// on its own and the pages must be cut and sorted by whole groups.
// Deleting messages, pruning them and clearing an inbox keep the search
// rows and keys exactly those of the messages left.
func TestSearchPagesAcrossManyMatches(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	base := time.UnixMilli(1_700_000_000_000)
	words := func(i int) string {
		w := []string{"filler"}
		if i%5 != 0 {
			w = append(w, "common")
		}
		if i%3 == 0 {
			w = append(w, "triple")
		}
		if i%97 == 0 {
			w = append(w, "rare")
		}
		if i%4 == 0 {
			w = append(w, "東京で会議があります")
		}
		return strings.Join(w, " ")
	}
	const n, threads = 1500, 60
	text := map[string]string{} // message id → its words
	for i := range n {
		for _, ib := range []string{b.Inbox.ID, other.ID} {
			if ib == other.ID && i%3 != 0 {
				continue
			}
			irt := ""
			if i >= threads {
				irt = fmt.Sprintf("In-Reply-To: <%s.%d@x>\r\n", ib, i%threads)
			}
			raw := fmt.Sprintf("Message-ID: <%s.%d@x>\r\n%sSubject: m%d\r\n\r\n%s\r\n", ib, i, irt, i, words(i))
			in := incoming(ib, raw)
			// About five messages a millisecond, arriving shuffled.
			in.ReceivedAt = base.Add(time.Duration((i*7919)%(n/5)) * time.Millisecond)
			ds, err := db.Ingest(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if ib == b.Inbox.ID {
				text[ds[0].MessageID] = words(i)
			}
		}
	}
	for id := range text { // some deleted before, most after their indexing
		if id[len(id)-1]%13 == 0 {
			if err := db.DeleteMessage(ctx, b.Inbox.ID, id); err != nil {
				t.Fatal(err)
			}
			delete(text, id)
		}
	}

	allMessages := func() []Message {
		var all []Message
		var after *TimeKey
		for {
			page, err := db.InboxPage(ctx, b.Inbox.ID, Query{}, "", after, 100)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page...)
			if len(page) < 100 {
				return all
			}
			last := page[len(page)-1]
			after = &TimeKey{At: last.CreatedAt.UnixMilli(), ID: last.ID}
		}
	}
	allThreads := func(q Query, limit int) []string {
		var ids []string
		var after *TimeKey
		for {
			page, err := db.ListThreads(ctx, b.Inbox.ID, q, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, th := range page {
				ids = append(ids, th.ID)
			}
			if len(page) < limit {
				return ids
			}
			last := page[len(page)-1]
			after = &TimeKey{At: last.LastMessageAt.UnixMilli(), ID: last.ID}
		}
	}
	check := func(when string) {
		t.Helper()
		all := allMessages()
		for _, qt := range []string{"common", "triple", "rare", "common triple", "東京", "filler", "nowhere", "comm*"} {
			q, err := ParseQuery(qt)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			threadHit := map[string]bool{}
			for _, m := range all {
				ok := true
				for _, w := range strings.Fields(strings.TrimSuffix(qt, "*")) {
					ok = ok && strings.Contains(text[m.ID], w)
				}
				if ok {
					want = append(want, m.ID)
					threadHit[m.ThreadID] = true
				}
			}
			for _, limit := range []int{4, 25, 100} {
				var got []string
				var after *TimeKey
				for {
					page, err := db.InboxPage(ctx, b.Inbox.ID, q, "", after, limit)
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range page {
						got = append(got, m.ID)
					}
					if len(page) < limit {
						break
					}
					last := page[len(page)-1]
					after = &TimeKey{At: last.CreatedAt.UnixMilli(), ID: last.ID}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: %q in pages of %d: %d messages, want %d (first difference at %d)",
						when, qt, limit, len(got), len(want), firstDiff(got, want))
				}
			}
			if got, err := db.InboxPage(ctx, b.Inbox.ID, q, "outbound", nil, 10); err != nil || len(got) != 0 {
				t.Errorf("%s: %q outbound: %d messages (%v), want none", when, qt, len(got), err)
			}
			var wantThreads []string
			for _, id := range allThreads(Query{}, 100) {
				if threadHit[id] {
					wantThreads = append(wantThreads, id)
				}
			}
			for _, probe := range []int{1, 1 << 30} { // walk the threads, collect the matches
				db.searchProbe = probe
				for _, limit := range []int{7} {
					if got := allThreads(q, limit); !slices.Equal(got, wantThreads) {
						t.Fatalf("%s: %q threads (probe %d, pages of %d): %d, want %d", when, qt, probe, limit, len(got), len(wantThreads))
					}
				}
			}
		}
		var keys, live int
		if err := db.r.QueryRow(`SELECT (SELECT count(*) FROM search_keys),
			(SELECT count(*) FROM messages WHERE deleted_at IS NULL)`).Scan(&keys, &live); err != nil {
			t.Fatal(err)
		}
		if fts := ftsRows(t, db); keys != live || fts != live {
			t.Errorf("%s: %d search keys and %d full-text rows for %d messages", when, keys, fts, live)
		}
	}
	check("stored")

	// Retention: the oldest go for good, with their search rows.
	if _, err := db.PruneMessages(ctx, Retention{Keep: 700}, 10000); err != nil {
		t.Fatal(err)
	}
	check("pruned")
	if _, err := db.DeleteInboxMessages(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	check("other inbox cleared")
	if err := db.DeleteInbox(ctx, b.ProjectID, other.ID); err != nil {
		t.Fatal(err)
	}
	check("other inbox deleted")
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Migration 0013 replaces the full-text table: a database from before it
// is searchable afterwards, every message under its search key, whether
// Open rebuilds the index (a large backlog) or Run and the first search do.
// It starts from the schema-13 fixture with 0013 undone.
func TestSearchKeysMigration(t *testing.T) {
	for _, inOpen := range []bool{false, true} {
		t.Run(fmt.Sprintf("rebuilt in Open %v", inOpen), func(t *testing.T) {
			ctx := context.Background()
			path := openFixtureV13(t)
			raw, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			var inbox string
			var rows, n, threads, live int
			if err := raw.QueryRow(`SELECT id FROM inboxes WHERE address = 'inbox@localhost'`).Scan(&inbox); err != nil {
				t.Fatal(err)
			}
			// The fixture's inbound mail all says "kubernetes" (v13gen);
			// a deleted message has no search row.
			if err := raw.QueryRow(`SELECT (SELECT max(rowid) FROM messages), (SELECT count(*) FROM messages WHERE deleted_at IS NULL),
				count(DISTINCT thread_id), count(*) FROM messages
				WHERE inbox_id = ? AND deleted_at IS NULL AND rfc_message_id LIKE 'm%@fixture.test'`, inbox).Scan(&rows, &n, &threads, &live); err != nil {
				t.Fatal(err)
			}
			// The writer would store the fixture's deferred message (its
			// ten minutes are over) while the counts are taken.
			for _, q := range append(slices.Clone(undoMigration0013), `DELETE FROM deferred_messages`) {
				if _, err := raw.Exec(q); err != nil {
					t.Fatal(q, err)
				}
			}
			if _, err := raw.Exec(`PRAGMA user_version = 12`); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			if inOpen {
				old := rebuildAbove
				rebuildAbove = 0
				t.Cleanup(func() { rebuildAbove = old })
			}
			db, _, stop := openRunning(t, Options{Path: path})
			defer stop()
			if inOpen {
				var through int64
				if err := db.r.QueryRow(`SELECT indexed_through FROM search_index`).Scan(&through); err != nil || through != int64(rows) {
					t.Fatalf("after Open: indexed through %d (%v), want %d", through, err, rows)
				}
			}
			if got := searchThreads(t, db, inbox, "kubernetes"); got != threads {
				t.Errorf("after: %d threads, want %d", got, threads)
			}
			q, _ := ParseQuery("kubernetes")
			page, err := db.InboxPage(ctx, inbox, q, "", nil, 500)
			if err != nil || len(page) != live {
				t.Errorf("after: kubernetes finds %d messages (%v), want %d", len(page), err, live)
			}
			var keys int
			if err := db.r.QueryRow(`SELECT count(*) FROM search_keys`).Scan(&keys); err != nil || keys != n || ftsRows(t, db) != n {
				t.Errorf("after: %d keys, %d full-text rows, want %d", keys, ftsRows(t, db), n)
			}
		})
	}
}
