package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/corpus"
)

// ruleMessage renders one rule-table arrival as a real message; the subject
// changes on every message, since the subject is never an input.
func ruleMessage(m corpus.RuleMessage, i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Message-ID: <%s>\r\nSubject: subject %d\r\n", m.Own, i)
	if len(m.InReplyTo) > 0 {
		fmt.Fprintf(&b, "In-Reply-To: <%s>\r\n", strings.Join(m.InReplyTo, "> <"))
	}
	if len(m.References) > 0 {
		// Commas and prose between tokens, as real mailers write them.
		fmt.Fprintf(&b, "References: <%s>\r\n", strings.Join(m.References, ">,\r\n (see) <"))
	}
	b.WriteString("\r\nbody\r\n")
	return b.String()
}

// TestRulesAgainstSQLite runs the rule table of the thread package through
// the real ingest transaction, in two inboxes at once: the same headers in
// two inboxes are never joined.
func TestRulesAgainstSQLite(t *testing.T) {
	cases, err := corpus.ThreadingRules(filepath.Join("..", "thread", "testdata", "rules.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			db, b := openTest(t)
			ctx := context.Background()
			other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
			if err != nil {
				t.Fatal(err)
			}
			labels := map[string]string{} // thread id → T-label, per inbox
			seen := map[string]bool{}
			for i, m := range tt.Messages {
				in := incoming(b.Inbox.ID, ruleMessage(m, i))
				in.Targets = []Target{{InboxID: b.Inbox.ID}, {InboxID: other.ID}}
				d, err := db.Ingest(ctx, in)
				if err != nil {
					t.Fatal(err)
				}
				for _, got := range d {
					key := got.InboxID + "/" + got.ThreadID
					if _, ok := labels[key]; !ok {
						labels[key] = fmt.Sprintf("T%d", len(labels)/2+1)
						if seen[got.ThreadID] {
							t.Fatalf("thread %s spans inboxes", got.ThreadID)
						}
						seen[got.ThreadID] = true
					}
					if labels[key] != m.Thread || string(got.Match) != m.Match {
						t.Errorf("%s in %s: got %s/%s, want %s/%s", m.Own, got.InboxID, labels[key], got.Match, m.Thread, m.Match)
					}
				}
			}
		})
	}
}
