package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/inboxd/inboxd/thread"
)

// Model is the reference implementation of SPEC §4 over maps: thread.Assign
// with an in-memory Finder per inbox, and the store's bookkeeping (first
// copy wins an id, links first writer wins and are dropped when their id
// arrives, id-less messages get a generated id of their own, never equal to
// another's). Tests run the same arrivals through the real store and
// compare.
type Model struct {
	inboxes   map[int]*modelInbox
	threads   int
	generated int
}

type modelInbox struct {
	msgs   map[string]thread.Stored
	copies map[[2]string]thread.Stored // inbound copies by own id and digest
	links  map[string]string
}

func (m *modelInbox) Message(id string) (thread.Stored, bool, error) {
	s, ok := m.msgs[id]
	return s, ok, nil
}

func (m *modelInbox) Copy(id, hash string) (thread.Stored, bool, error) {
	s, ok := m.copies[[2]string{id, hash}]
	return s, ok, nil
}

func (m *modelInbox) Link(id string) (string, bool, error) {
	t, ok := m.links[id]
	return t, ok, nil
}

// NewModel returns an empty model.
func NewModel() *Model { return &Model{inboxes: map[int]*modelInbox{}} }

// Arrival is one inbound message as the store sees its headers.
type Arrival struct {
	Inbox                            int
	MessageID, InReplyTo, References []string // raw header values
	Raw                              []byte   // the bytes as received (for duplicates)
}

// Outcome is where the model put an arrival. Thread labels are "T1", "T2",
// … in creation order across all inboxes.
type Outcome struct {
	Thread    string
	Match     thread.Match
	Duplicate bool
}

// Deliver threads one arrival.
func (m *Model) Deliver(a Arrival) Outcome {
	ib := m.inboxes[a.Inbox]
	if ib == nil {
		ib = &modelInbox{msgs: map[string]thread.Stored{}, copies: map[[2]string]thread.Stored{}, links: map[string]string{}}
		m.inboxes[a.Inbox] = ib
	}
	sum := sha256.Sum256(a.Raw)
	hash := hex.EncodeToString(sum[:])
	own := thread.OwnID(a.MessageID)
	if own == "" {
		m.generated++
		own = fmt.Sprintf("generated-%d@inboxd.invalid", m.generated)
	}
	irt, refs := thread.ExtractIDs(a.InReplyTo), thread.ExtractIDs(a.References)
	res, _ := thread.Assign(ib, thread.Input{OwnID: own, Candidates: thread.Candidates(own, irt, refs), Hash: hash, Inbound: true})
	if res.Duplicate {
		return Outcome{Thread: res.ThreadID, Duplicate: true}
	}
	if res.ThreadID == "" {
		m.threads++
		res.ThreadID = fmt.Sprintf("T%d", m.threads)
	}
	if _, ok := ib.msgs[own]; !ok {
		ib.msgs[own] = thread.Stored{ThreadID: res.ThreadID}
	}
	if _, ok := ib.copies[[2]string{own, hash}]; !ok {
		ib.copies[[2]string{own, hash}] = thread.Stored{ThreadID: res.ThreadID}
	}
	for _, l := range res.Links {
		if _, ok := ib.links[l]; !ok {
			ib.links[l] = res.ThreadID
		}
	}
	delete(ib.links, own)
	return Outcome{Thread: res.ThreadID, Match: res.Match}
}

// Arrivals decodes fuzz bytes into up to 24 messages over a small id
// alphabet, so that references collide often: each message takes 4 bytes
// (inbox, own id, in-reply-to, a References bitmask). Some messages have no
// Message-ID, one id has no '@' ("yes"), and some are byte-identical
// (duplicate deliveries, unless they have no Message-ID).
func Arrivals(data []byte) []Arrival {
	ids := []string{"a@x", "b@x", "c@x", "d@x", "e@x", "f@x", "yes", "g@x"}
	var out []Arrival
	for i := 0; i+4 <= len(data) && len(out) < 24; i += 4 {
		var a Arrival
		var b []byte
		a.Inbox = int(data[i] % 2)
		if data[i+1]&0x80 == 0 {
			a.MessageID = []string{"<" + ids[data[i+1]%8] + ">"}
			b = fmt.Appendf(b, "Message-ID: %s\r\n", a.MessageID[0])
		}
		if data[i+2]&0x08 != 0 {
			a.InReplyTo = []string{"<" + ids[data[i+2]%8] + ">"}
			b = fmt.Appendf(b, "In-Reply-To: %s\r\n", a.InReplyTo[0])
		}
		refs := ""
		for bit := range 8 {
			if data[i+3]&(1<<bit) != 0 {
				if refs != "" {
					refs += ", "
				}
				refs += "<" + ids[bit] + ">"
			}
		}
		if refs != "" {
			a.References = []string{refs}
			b = fmt.Appendf(b, "References: %s\r\n", refs)
		}
		a.Raw = fmt.Appendf(b, "Subject: s\r\n\r\nbody %d\r\n", data[i]%3)
		out = append(out, a)
	}
	return out
}
