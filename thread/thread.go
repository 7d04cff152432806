// Package thread owns the threading rules of SPEC §4: lenient Message-ID
// extraction, the candidate order, and Assign, which places one message in a
// thread by asking a tiny Finder about what the inbox already holds. It is
// pure: the store implements Finder inside its write transaction.
package thread

import (
	"strings"
)

// Match says which rule placed a message in its thread; it is shown to API
// clients as thread_match. Assign decides every one of them for a stored
// message except MatchReplyToMessageID, which a send with
// reply_to_message_id takes from its parent (store/send.go, queueTx).
type Match string

const (
	MatchInReplyTo        Match = "in_reply_to"
	MatchReferences       Match = "references"
	MatchMissingParent    Match = "missing_parent"
	MatchNew              Match = "new"
	MatchEcho             Match = "echo"
	MatchSameMessageID    Match = "same_message_id"
	MatchReplyToMessageID Match = "reply_to_message_id"
)

// ExtractIDs returns every non-empty <…> token of the given header values,
// in order, with the angle brackets removed and surrounding whitespace
// trimmed. Junk between tokens (commas, prose, folding) is ignored.
//
// QUIRK: go-message's MsgIDList stops at the first malformed token and loses
// the rest; real References headers carry prose, commas and ids without '@'
// (git-send-email's "<yes>"), so every bracketed token counts.
func ExtractIDs(values []string) []string {
	var ids []string
	for _, v := range values {
		for {
			open := strings.IndexByte(v, '<')
			if open < 0 {
				break
			}
			rest := v[open+1:]
			end := strings.IndexByte(rest, '>')
			if end < 0 {
				break
			}
			// QUIRK: "<<a@b>>" and "<x <a@b>" – the token is what follows the
			// last '<' before the closing '>'.
			tok := rest[:end]
			if i := strings.LastIndexByte(tok, '<'); i >= 0 {
				tok = tok[i+1:]
			}
			if id := strings.TrimSpace(tok); id != "" {
				ids = append(ids, id)
			}
			v = rest[end+1:]
		}
	}
	return ids
}

// OwnID returns a message's own id from its Message-ID header values: the
// first <…> token, else the trimmed value when it has no spaces. It returns
// "" when the message has no usable id (the caller generates one, SPEC §3).
func OwnID(values []string) string {
	if ids := ExtractIDs(values); len(ids) > 0 {
		return ids[0]
	}
	for _, v := range values {
		// QUIRK: some senders write a bare "id@host" without brackets.
		v = strings.TrimSpace(v)
		if v != "" && !strings.ContainsAny(v, " \t\r\n<>") {
			return v
		}
	}
	return ""
}

// Candidate is one id a message refers to, in the order Assign tries it.
type Candidate struct {
	ID        string
	InReplyTo bool // from In-Reply-To (else from References)
}

// Candidates orders the referenced ids per SPEC §4 step 1: In-Reply-To ids
// first, then References from newest (last) to oldest. An id listed twice is
// tried once, at its first position; own, the message's own id, is never a
// candidate (a self-reference must not thread a message onto itself).
func Candidates(own string, inReplyTo, references []string) []Candidate {
	seen := make(map[string]bool, len(inReplyTo)+len(references))
	seen[own] = true
	out := make([]Candidate, 0, len(inReplyTo)+len(references))
	add := func(id string, irt bool) {
		if !seen[id] {
			seen[id] = true
			out = append(out, Candidate{ID: id, InReplyTo: irt})
		}
	}
	for _, id := range inReplyTo {
		add(id, true)
	}
	for i := len(references) - 1; i >= 0; i-- {
		add(references[i], false)
	}
	return out
}

// linkable reports whether an id may create or follow a missing-parent link:
// tokens without '@' ("<yes>") are too generic to join strangers' mail.
func linkable(id string) bool { return strings.Contains(id, "@") }

// Stored describes a stored message of an inbox.
type Stored struct {
	MessageID string
	ThreadID  string
	Outbound  bool
}

// Finder answers questions about one inbox. The store implements it inside
// the write transaction, so answers and the insert that follows are atomic.
type Finder interface {
	// Message returns the first stored message of the inbox whose id
	// (or alias) is id.
	Message(id string) (Stored, bool, error)
	// Copy returns a stored inbound message of the inbox whose own id is id
	// and whose bytes as received have the digest hash: an earlier delivery
	// of the very same message, whichever copy of the id it was.
	Copy(id, hash string) (Stored, bool, error)
	// Link returns the thread a missing-parent link for id points to.
	Link(id string) (string, bool, error)
}

// Input is what Assign needs to know about the message being stored.
type Input struct {
	OwnID      string
	Candidates []Candidate
	Hash       string // digest of the bytes as received (without our trace header)
	Inbound    bool
	// KeepDuplicates stores a duplicate delivery like any other copy of
	// its id (--store-duplicates) instead of reporting Duplicate.
	KeepDuplicates bool
}

// Result says where the message goes.
type Result struct {
	// Duplicate is an SMTP retry of a stored message: store nothing.
	// MessageID is then the stored copy.
	Duplicate bool
	MessageID string
	// ThreadID is the thread to join; "" opens a new thread.
	ThreadID string
	Match    Match
	Echo     bool
	// Unresolved reports that the message had candidates and none of them
	// resolved (the input of the deferred parent lookup).
	Unresolved bool
	// Links are the ids to record as missing-parent links to the message's
	// thread (SPEC §4 step 5), in candidate order.
	Links []string
}

// Assign applies SPEC §4 to one inbound or outbound-without-parent message.
func Assign(f Finder, in Input) (Result, error) {
	var res Result
	if in.OwnID != "" {
		if in.Inbound && !in.KeepDuplicates {
			c, ok, err := f.Copy(in.OwnID, in.Hash)
			if err != nil {
				return Result{}, err
			}
			if ok {
				return Result{Duplicate: true, MessageID: c.MessageID, ThreadID: c.ThreadID}, nil
			}
		}
		first, ok, err := f.Message(in.OwnID)
		if err != nil {
			return Result{}, err
		}
		if ok {
			switch {
			case in.Inbound && first.Outbound:
				res = Result{ThreadID: first.ThreadID, Match: MatchEcho, Echo: true}
			default:
				res = Result{ThreadID: first.ThreadID, Match: MatchSameMessageID}
			}
		}
	}

	// Step 2 and step 5 both need to know which candidates are stored.
	var links []string
	for _, c := range in.Candidates {
		m, ok, err := f.Message(c.ID)
		if err != nil {
			return Result{}, err
		}
		switch {
		case ok && res.Match == "":
			res.ThreadID = m.ThreadID
			res.Match = MatchReferences
			if c.InReplyTo {
				res.Match = MatchInReplyTo
			}
		case !ok && linkable(c.ID):
			links = append(links, c.ID)
		}
	}

	// Step 3: missing-parent links; own id first, then the candidates.
	if res.Match == "" {
		tries := make([]string, 0, len(links)+1)
		if linkable(in.OwnID) {
			tries = append(tries, in.OwnID)
		}
		tries = append(tries, links...)
		for _, id := range tries {
			t, ok, err := f.Link(id)
			if err != nil {
				return Result{}, err
			}
			if ok {
				res.ThreadID, res.Match = t, MatchMissingParent
				break
			}
		}
	}
	if res.Match == "" {
		res.Match = MatchNew
		res.Unresolved = len(in.Candidates) > 0
	}
	res.Links = links
	return res, nil
}
