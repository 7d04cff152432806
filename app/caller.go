package app

import (
	"slices"

	"github.com/inboxd/inboxd/store"
)

// Caller is who asks for an operation: an authenticated API key, with its
// project, scopes and inbox grant. It wraps store.Key rather than being an
// alias of it so that the authorization rules below are app's (methods
// cannot be declared on another package's type), while every field of
// the key, and Has, stay at hand; a surface builds one from the key its
// authentication found.
type Caller struct {
	store.Key
}

// Need is nil when the caller holds scope, otherwise permission_denied
// (SPEC §5.1). Every operation calls it before it looks at its input.
func (c Caller) Need(scope string) error {
	if !c.Has(scope) {
		return &Error{Code: EPermissionDenied, Message: "This API key lacks the scope " + scope + "."}
	}
	return nil
}

// CanSee reports whether the caller's grant covers an inbox.
func (c Caller) CanSee(inboxID string) bool {
	return c.InboxIDs == nil || slices.Contains(c.InboxIDs, inboxID)
}

// CoversInboxes reports whether the caller's grant covers a list of
// inboxes; nil, every inbox of the project, is covered only by an
// unrestricted key.
func (c Caller) CoversInboxes(inboxIDs []string) bool {
	if c.InboxIDs == nil {
		return true
	}
	if inboxIDs == nil {
		return false
	}
	for _, id := range inboxIDs {
		if !c.CanSee(id) {
			return false
		}
	}
	return true
}

// Covers reports whether the caller's grant covers another key's: every
// scope of it, and its inboxes (SPEC §5.1).
func (c Caller) Covers(other store.Key) bool {
	for _, sc := range other.Scopes {
		if !c.Has(sc) {
			return false
		}
	}
	return c.CoversInboxes(other.InboxIDs)
}

// Granted is the inboxes that ids, once MayGrant has let them through,
// give a new key or webhook endpoint: as listed, or, left out, the
// caller's own.
func (c Caller) Granted(ids OptionalIDs) []string {
	if !ids.Set {
		return c.InboxIDs
	}
	return ids.IDs
}

// errUnknownInbox is the answer when the inbox_ids given a new key or
// endpoint name an inbox that does not exist (only an unrestricted caller
// gets that far: MayGrant refuses any other inbox outside a grant).
var errUnknownInbox = Invalidf("inbox_ids", "inbox_ids names an inbox that does not exist.")

// MayGrant is nil when the caller may hand out ids as the inboxes of a key
// or webhook endpoint: each within its own grant, and null (every inbox)
// only from an unrestricted caller. Left out, they are the caller's own,
// which it may always hand out.
func (c Caller) MayGrant(ids OptionalIDs) error {
	if !ids.Set {
		return nil
	}
	if ids.IDs == nil && c.InboxIDs != nil {
		return Invalidf("inbox_ids", "This key is restricted to some inboxes: inbox_ids must list them.")
	}
	for _, id := range ids.IDs {
		if !c.CanSee(id) {
			return Invalidf("inbox_ids", "Unknown inbox %q.", id)
		}
	}
	return nil
}
