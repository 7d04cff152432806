package thread_test

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/inboxd/inboxd/corpus"
)

func brackets(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "<" + id + ">"
	}
	return out
}

func TestAssignRules(t *testing.T) {
	cases, err := corpus.ThreadingRules(filepath.Join("testdata", "rules.txt"))
	if err != nil {
		t.Fatal(err)
	}
	long := make([]string, 1000)
	for i := range long {
		long[i] = fmt.Sprintf("r%d@x", i)
	}
	cases = append(cases, corpus.RuleCase{Name: "very long references", Messages: []corpus.RuleMessage{
		{Own: "r0@x", Thread: "T1", Match: "new"},
		{Own: "z@x", References: long, Thread: "T1", Match: "references"},
		{Own: "y@x", References: []string{"r999@x"}, Thread: "T1", Match: "missing_parent"},
	}})
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			model := corpus.NewModel()
			for _, m := range tt.Messages {
				got := model.Deliver(corpus.Arrival{
					MessageID: brackets([]string{m.Own}), InReplyTo: brackets(m.InReplyTo), References: brackets(m.References),
					Raw: []byte(m.Own),
				})
				if got.Thread != m.Thread || string(got.Match) != m.Match {
					t.Errorf("%s: got %s/%s, want %s/%s", m.Own, got.Thread, got.Match, m.Thread, m.Match)
				}
			}
		})
	}
}

// FuzzAssign drives random headers and arrival orders through the rules
// (the shared model: Assign plus the store's bookkeeping) and checks the
// invariants of SPEC §4: every message in exactly one thread, no thread
// spanning inboxes, and the grouping a function of the arrival order.
// store's TestIngestMatchesModel runs the same inputs through SQLite.
func FuzzAssign(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 2, 9, 1, 1, 3, 10, 3, 0, 6, 14, 0})
	f.Add([]byte{0, 2, 9, 0, 0, 1, 0, 0, 0, 3, 9, 0, 0, 3, 9, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		arrivals := corpus.Arrivals(data)
		run := func() []corpus.Outcome {
			m := corpus.NewModel()
			out := make([]corpus.Outcome, len(arrivals))
			for i, a := range arrivals {
				out[i] = m.Deliver(a)
			}
			return out
		}
		first := run()
		if again := run(); !reflect.DeepEqual(first, again) {
			t.Fatalf("same order, different grouping:\n%v\n%v", first, again)
		}
		threadInbox := map[string]int{}
		for i, o := range first {
			if o.Thread == "" {
				t.Fatalf("arrival %d has no thread", i)
			}
			if o.Duplicate {
				continue
			}
			if in, ok := threadInbox[o.Thread]; ok && in != arrivals[i].Inbox {
				t.Fatalf("thread %s spans inboxes", o.Thread)
			}
			threadInbox[o.Thread] = arrivals[i].Inbox
		}
	})
}
