package mailgen

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/inboxd/inboxd/message"
)

// TestBuild checks that generated mail parses cleanly, keeps its threading
// headers and attachment, and comes out near the size asked for (the load
// reports quote MB/s and sizes from these messages).
func TestBuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{2048, 4096, 65536} {
		for _, reply := range []bool{false, true} {
			for _, attach := range []bool{false, true} {
				t.Run(fmt.Sprintf("size=%d/reply=%v/attach=%v", size, reply, attach), func(t *testing.T) {
					m := Message{ID: "a@example.com", Subject: "Grüße aus 東京", To: "inbox@localhost",
						Date: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Size: size, Attachment: attach}
					if reply {
						m.InReplyTo, m.References = "p@example.com", []string{"r@example.com", "p@example.com"}
					}
					raw := Build(m, rng)
					if got := len(raw); got < size*85/100 || got > size*115/100 {
						t.Errorf("size %d, want %d ± 15%%", got, size)
					}
					p := message.Parse(raw)
					if p.ParseError != "" || !p.HasText || !p.HasHTML || p.Subject != m.Subject {
						t.Errorf("parse error %q, text %v, html %v, subject %q", p.ParseError, p.HasText, p.HasHTML, p.Subject)
					}
					if reply && (len(p.InReplyTo) != 1 || len(p.References) != 1) {
						t.Errorf("In-Reply-To %q, References %q", p.InReplyTo, p.References)
					}
					if want := map[bool]int{true: 1}[attach]; len(p.Attachments) != want {
						t.Errorf("%d attachments, want %d", len(p.Attachments), want)
					}
				})
			}
		}
	}
}
