package thread

import "strings"

// ReplySubject is "Re: " + subject, without stacking prefixes.
func ReplySubject(subject string) string {
	s := strings.TrimSpace(subject)
	lower := strings.ToLower(s)
	for _, p := range []string{"re:", "re :", "aw:", "sv:", "antw:"} {
		if strings.HasPrefix(lower, p) {
			return s
		}
	}
	return "Re: " + s
}

// maxReferences bounds the References header of a reply; RFC 5322 §3.6.4
// allows trimming, and keeping the first id keeps the thread's root.
const maxReferences = 20

// ReplyReferences is the parent's References plus the parent's id (none
// when parentID is ""), trimmed from the front (keeping the first) when
// too long.
func ReplyReferences(parentRefs []string, parentID string) []string {
	refs := append([]string{}, parentRefs...)
	if parentID != "" {
		refs = append(refs, parentID)
	}
	if len(refs) <= maxReferences {
		return refs
	}
	return append([]string{refs[0]}, refs[len(refs)-maxReferences+1:]...)
}
