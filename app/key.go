package app

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/inboxd/inboxd/store"
)

// Me is the caller's own key: how a client learns its project, scopes and
// inboxes. Any valid key may ask.
func (a *App) Me(c Caller) store.Key { return c.Key }

// A caller with keys:write sees, lists and revokes only the keys its own
// grant covers (Caller.Covers): any other answers exactly like a key that
// does not exist (SPEC §5.1).

// ListKeys is a page of the project's keys that the caller's grant
// covers, oldest first.
func (a *App) ListKeys(ctx context.Context, c Caller, p PageParams) (Page[store.Key], error) {
	if err := c.Need("keys:write"); err != nil {
		return Page[store.Key]{}, err
	}
	return GrantedPage(a, c, "keys", p,
		func(after *store.TimeKey, n int) ([]store.Key, error) {
			return a.db.KeysAfter(ctx, c.ProjectID, after, n)
		},
		c.Covers, func(k store.Key) (time.Time, string) { return k.CreatedAt, k.ID })
}

// OptionalIDs is a JSON list of ids that tells absent (Set false) from
// null (Set, IDs nil: every inbox).
type OptionalIDs struct {
	Set bool
	IDs []string // nil for null
}

func (o *OptionalIDs) UnmarshalJSON(b []byte) error {
	o.Set = true
	return json.Unmarshal(b, &o.IDs)
}

// Nullable is a field of an input that tells left out (Set false) from
// null (Set and Null) and a value: a pointer reads null as left out, so a
// PATCH could not clear a field the object shows as null.
type Nullable[T any] struct {
	Set, Null bool
	V         T
}

func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.V)
}

// Value is the field's value, nil when it was left out or null.
func (n Nullable[T]) Value() *T {
	if !n.Set || n.Null {
		return nil
	}
	return &n.V
}

// orEmpty is Value, except that null is T's zero value: what clears a
// field whose empty value the object shows as null.
func (n Nullable[T]) orEmpty() *T {
	if n.Null {
		var zero T
		return &zero
	}
	return n.Value()
}

// notNull refuses null for a field that has no null value, naming it.
func notNull[T any](field string, n Nullable[T]) error {
	if n.Null {
		return Invalidf(field, "%s must not be null.", field)
	}
	return nil
}

// KeyInput is the input of CreateKey. InboxIDs left out is the caller's
// own inboxes; null is every inbox, which only an unrestricted caller may
// give.
type KeyInput struct {
	Name     string      `json:"name"`
	Scopes   []string    `json:"scopes"`
	InboxIDs OptionalIDs `json:"inbox_ids"`
}

// CreateKey creates a key and returns it with its token, shown this once.
// A grant wider than the caller's own is refused as invalid_request
// naming the field: the key asked for does not exist yet, so there is
// nothing to answer not_found about (that answer is for existing keys).
func (a *App) CreateKey(ctx context.Context, c Caller, decode Decoder) (store.Key, string, error) {
	if err := c.Need("keys:write"); err != nil {
		return store.Key{}, "", err
	}
	var in KeyInput
	if err := decode(&in); err != nil {
		return store.Key{}, "", err
	}
	if len(in.Scopes) == 0 {
		return store.Key{}, "", Invalidf("scopes", "scopes must list at least one scope.")
	}
	// Scopes and inboxes are sets: a name given twice is held once.
	in.Scopes = firstOfEach(in.Scopes)
	if in.InboxIDs.IDs != nil {
		in.InboxIDs.IDs = firstOfEach(in.InboxIDs.IDs)
	}
	for _, sc := range in.Scopes {
		if !slices.Contains(store.AllScopes(), sc) {
			return store.Key{}, "", Invalidf("scopes", "Unknown scope %q.", sc)
		}
	}
	// A key can hand out only what it holds.
	for _, sc := range in.Scopes {
		if !c.Has(sc) {
			return store.Key{}, "", Invalidf("scopes", "Cannot grant scope %q: this key does not hold it.", sc)
		}
	}
	// A restricted key cannot mint a key for inboxes it cannot see.
	if err := c.MayGrant(in.InboxIDs); err != nil {
		return store.Key{}, "", err
	}
	k, token, err := a.db.CreateKey(ctx, c.ProjectID, in.Name, in.Scopes, c.Granted(in.InboxIDs))
	if errors.Is(err, store.ErrNotFound) {
		return store.Key{}, "", errUnknownInbox
	}
	return k, token, err
}

// firstOfEach is ss without repeats, in the order of first mention.
func firstOfEach(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// RevokeKey revokes a key the caller's grant covers.
func (a *App) RevokeKey(ctx context.Context, c Caller, keyID string) error {
	if err := c.Need("keys:write"); err != nil {
		return err
	}
	// A key's scopes and inboxes never change: checked here, they still
	// hold when it is revoked.
	other, err := a.db.GetKey(ctx, c.ProjectID, keyID)
	if err != nil {
		return err
	}
	if !c.Covers(other) {
		return ErrNotFound
	}
	return a.db.RevokeKey(ctx, c.ProjectID, keyID)
}
