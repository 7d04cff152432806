package app

import (
	"slices"
	"testing"
	"time"

	"github.com/inboxd/inboxd/store"
)

func TestPageSize(t *testing.T) {
	for _, c := range []struct {
		limit string
		want  int // 0: refused
	}{
		{"", 25}, {"1", 1}, {"100", 100}, {"42", 42},
		{"0", 0}, {"101", 0}, {"-1", 0}, {"abc", 0}, {"1.5", 0}, {" 5", 0}, {"1e2", 0}, {"+5", 0}, {"5,5", 0}, {"0x10", 0},
	} {
		got, err := PageParams{Limit: c.limit}.Size(25)
		if c.want == 0 {
			wantError(t, err, EInvalidRequest, "limit")
			if m := ErrorMessage(err); m != "limit must be an integer from 1 to 100." {
				t.Errorf("limit %q: message %q", c.limit, m)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("limit %q: %d, %v; want %d", c.limit, got, err, c.want)
		}
	}
}

func TestNewPage(t *testing.T) {
	e := newEnv(t)
	scope := CursorScope{Project: "prj_1", List: "test"}
	pos := func(n int) any { return store.TimeKey{At: int64(n), ID: "x"} }
	p, err := NewPage(e.app, []int{1, 2, 3}, 2, scope, pos)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Rows, []int{1, 2}) || !p.HasMore || p.Next == "" {
		t.Fatalf("page of 3 rows, limit 2: %+v", p)
	}
	if k, err := Position[store.TimeKey](e.app, scope, p.Next); err != nil || k.At != 2 {
		t.Errorf("next cursor is at %v (%v), want the last row shown", k, err)
	}
	p, err = NewPage(e.app, []int{1, 2}, 2, scope, pos)
	if err != nil || !slices.Equal(p.Rows, []int{1, 2}) || p.HasMore || p.Next != "" {
		t.Errorf("last page: %+v, %v", p, err)
	}
}

// A restricted caller's page of the project's inboxes skips the rows
// outside its grant and reads on in their place: every page is full,
// has_more is exact (false on the last visible row, though hidden rows
// follow it), and no page is empty while visible rows remain.
func TestGrantedPageSkipsRowsOutsideTheGrant(t *testing.T) {
	e := newEnv(t)
	var all []string
	for _, a := range []string{"i1", "i2", "i3", "i4", "i5", "i6", "i7"} {
		all = append(all, e.inbox(a+"@example.com").ID)
	}
	grant := []string{all[0], all[3], all[5]} // i1, i4, i6; i7 hidden after the last
	restricted := Caller{Key: store.Key{ProjectID: e.boot.ProjectID, InboxIDs: grant}}
	walk := func(c Caller, limit string) (pages [][]string, more []bool) {
		t.Helper()
		p := PageParams{Limit: limit}
		for {
			page, err := GrantedPage(e.app, c, "inboxes", p,
				func(after *store.TimeKey, n int) ([]store.Inbox, error) {
					return e.db.InboxesAfter(e.ctx, e.boot.ProjectID, after, n)
				},
				func(ib store.Inbox) bool { return c.CanSee(ib.ID) },
				func(ib store.Inbox) (time.Time, string) { return ib.CreatedAt, ib.ID })
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, ib := range page.Rows {
				ids = append(ids, ib.ID)
			}
			pages, more = append(pages, ids), append(more, page.HasMore)
			if !page.HasMore || len(pages) > 10 {
				return pages, more
			}
			p.Cursor = page.Next
		}
	}
	for _, c := range []struct {
		caller Caller
		limit  string
		pages  [][]string
	}{
		{restricted, "1", [][]string{{all[0]}, {all[3]}, {all[5]}}},
		{restricted, "2", [][]string{{all[0], all[3]}, {all[5]}}},
		{restricted, "3", [][]string{{all[0], all[3], all[5]}}},
		{e.admin, "4", [][]string{{e.boot.Inbox.ID, all[0], all[1], all[2]}, {all[3], all[4], all[5], all[6]}}},
	} {
		pages, more := walk(c.caller, c.limit)
		if !slices.EqualFunc(pages, c.pages, slices.Equal) {
			t.Errorf("grant %v, limit %s: pages %v, want %v", c.caller.InboxIDs, c.limit, pages, c.pages)
		}
		for i, m := range more {
			if m != (i < len(c.pages)-1) {
				t.Errorf("grant %v, limit %s: page %d has_more = %v", c.caller.InboxIDs, c.limit, i, m)
			}
		}
	}
	// A grant that sees nothing gets an empty last page, not an error.
	none := Caller{Key: store.Key{ProjectID: e.boot.ProjectID, InboxIDs: []string{}}}
	if pages, more := walk(none, ""); len(pages) != 1 || len(pages[0]) != 0 || more[0] {
		t.Errorf("empty grant: %v %v", pages, more)
	}
	// The cursor of one list does not read another.
	page, err := GrantedPage(e.app, restricted, "inboxes", PageParams{Limit: "1"},
		func(after *store.TimeKey, n int) ([]store.Inbox, error) {
			return e.db.InboxesAfter(e.ctx, e.boot.ProjectID, after, n)
		}, func(store.Inbox) bool { return true }, func(ib store.Inbox) (time.Time, string) { return ib.CreatedAt, ib.ID })
	if err != nil {
		t.Fatal(err)
	}
	_, err = GrantedPage(e.app, restricted, "keys", PageParams{Cursor: page.Next},
		func(*store.TimeKey, int) ([]store.Key, error) { return nil, nil }, func(store.Key) bool { return true },
		func(k store.Key) (time.Time, string) { return k.CreatedAt, k.ID })
	if err != ErrInvalidCursor {
		t.Errorf("an inboxes cursor on the keys list: %v, want ErrInvalidCursor", err)
	}
}
