package message

import "strings"

// SplitTag splits a recipient address into the inbox address it reaches
// and its subaddress tag (SPEC §2): user+tag@domain reaches user@domain.
// Inbox addresses compare case-insensitively, so base is lower-cased; the
// tag is kept as sent (Build42 stays Build42). An address with no tag, or
// whose local part starts with "+", is its own base with no tag.
func SplitTag(address string) (base, tag string) {
	sent := strings.TrimSpace(address)
	base = strings.ToLower(sent)
	at := strings.LastIndexByte(sent, '@')
	if at <= 0 {
		return base, ""
	}
	user, t, ok := strings.Cut(sent[:at], "+")
	if !ok || user == "" {
		return base, ""
	}
	return strings.ToLower(user + sent[at:]), t
}
