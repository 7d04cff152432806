package thread

import "strings"

// ReplySubject is "Re: " + subject, without stacking prefixes: a subject
// that starts with a reply prefix (Re:, RE :, Re[2]:, Re(3):, Re^2:, and
// AW:, SV:, Antw:) is kept as it is.
func ReplySubject(subject string) string {
	s := strings.TrimSpace(subject)
	if hasReplyPrefix(strings.ToLower(s)) {
		return s
	}
	return "Re: " + s
}

func hasReplyPrefix(lower string) bool {
	for _, p := range []string{"re", "aw", "sv", "antw"} {
		rest, ok := strings.CutPrefix(lower, p)
		if !ok {
			continue
		}
		// A count some mailers add: [2], (2) or ^2.
		if len(rest) > 0 && strings.IndexByte("[(^", rest[0]) >= 0 {
			closing := [...]string{"]", ")", ""}[strings.IndexByte("[(^", rest[0])]
			after := strings.TrimLeft(rest[1:], "0123456789")
			if len(after) == len(rest)-1 {
				continue // no digits
			}
			if rest, ok = strings.CutPrefix(after, closing); !ok {
				continue
			}
		}
		rest = strings.TrimLeft(rest, " ")
		if strings.HasPrefix(rest, ":") {
			return true
		}
	}
	return false
}

// maxReferences bounds the References header of a reply; RFC 5322 §3.6.4
// allows trimming, and keeping the first id keeps the thread's root.
const maxReferences = 20

// ReplyReferences is a reply's References (RFC 5322 §3.6.4): the
// parent's References, or when it has none its In-Reply-To if that is one
// id, then the parent's own id (none when parentID is ""), trimmed from
// the front (keeping the first) when too long.
func ReplyReferences(parentRefs, parentInReplyTo []string, parentID string) []string {
	if len(parentRefs) == 0 && len(parentInReplyTo) == 1 {
		parentRefs = parentInReplyTo
	}
	refs := append([]string{}, parentRefs...)
	if parentID != "" {
		refs = append(refs, parentID)
	}
	if len(refs) <= maxReferences {
		return refs
	}
	return append([]string{refs[0]}, refs[len(refs)-maxReferences+1:]...)
}
