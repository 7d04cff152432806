package app

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/inboxd/inboxd/store"
)

// ListInboxes is a page of the project's inboxes, oldest first: for a
// restricted caller only those of its grant.
func (a *App) ListInboxes(ctx context.Context, c Caller, p PageParams) (Page[store.Inbox], error) {
	if err := c.Need("inboxes:read"); err != nil {
		return Page[store.Inbox]{}, err
	}
	return GrantedPage(a, c, "inboxes", p,
		func(after *store.TimeKey, n int) ([]store.Inbox, error) {
			return a.db.InboxesAfter(ctx, c.ProjectID, after, n)
		},
		func(ib store.Inbox) bool { return c.CanSee(ib.ID) },
		func(ib store.Inbox) (time.Time, string) { return ib.CreatedAt, ib.ID })
}

// Inbox is one inbox of the caller's grant.
func (a *App) Inbox(ctx context.Context, c Caller, inboxID string) (store.Inbox, error) {
	if err := c.Need("inboxes:read"); err != nil {
		return store.Inbox{}, err
	}
	return a.GrantedInbox(ctx, c, inboxID)
}

// GrantedInbox loads an inbox within the caller's grant: one outside it is
// ErrNotFound, as one that does not exist. It checks no scope: it is for
// the operations that check their own (and, until issue 14 moves them
// here, for api's send route).
func (a *App) GrantedInbox(ctx context.Context, c Caller, inboxID string) (store.Inbox, error) {
	if !c.CanSee(inboxID) {
		return store.Inbox{}, ErrNotFound
	}
	return a.db.GetInbox(ctx, c.ProjectID, inboxID)
}

// InboxInput is the input of CreateInbox and UpdateInbox; a nil or unset
// field is one not given. A null display_name is none; send_policy and
// allowed_domains have no null.
type InboxInput struct {
	Address        *string            `json:"address"`
	Username       *string            `json:"username"`
	Domain         *string            `json:"domain"`
	DisplayName    Nullable[string]   `json:"display_name"` // null: none
	Environment    *string            `json:"environment"`
	SendPolicy     Nullable[string]   `json:"send_policy"`
	AllowedDomains Nullable[[]string] `json:"allowed_domains"`
}

var sendPolicies = []string{"allow", "approve_all", "approve_external"}

// validatePatchable checks the fields an update may change.
func (in *InboxInput) validatePatchable() error {
	for _, err := range []error{notNull("send_policy", in.SendPolicy), notNull("allowed_domains", in.AllowedDomains)} {
		if err != nil {
			return err
		}
	}
	if hasControl(in.DisplayName.V) {
		return Invalidf("display_name", "display_name %s.", noControl)
	}
	if in.SendPolicy.Set && !slices.Contains(sendPolicies, in.SendPolicy.V) {
		return Invalidf("send_policy", "send_policy must be allow, approve_all or approve_external.")
	}
	for i, d := range in.AllowedDomains.V {
		if !store.ValidDomain(d) {
			return Invalidf("allowed_domains", "allowed_domains holds an invalid domain %q.", d)
		}
		in.AllowedDomains.V[i] = strings.ToLower(d) // domains are case-insensitive
	}
	return nil
}

// CreateInbox creates an inbox from an InboxInput: an address, or a
// username and a domain; an address in use is a conflict.
func (a *App) CreateInbox(ctx context.Context, c Caller, decode Decoder) (store.Inbox, error) {
	if err := c.Need("inboxes:write"); err != nil {
		return store.Inbox{}, err
	}
	// A new inbox lies outside any list of inboxes, so a key restricted to
	// some cannot create one: it could never read the inbox it made, and a
	// conflict would tell it which addresses inboxes outside its grant have.
	if c.InboxIDs != nil {
		return store.Inbox{}, &Error{Code: EPermissionDenied, Message: "This API key is restricted to some inboxes and cannot create inboxes."}
	}
	var in InboxInput
	if err := decode(&in); err != nil {
		return store.Inbox{}, err
	}
	var address string
	switch {
	case in.Address != nil && (in.Username != nil || in.Domain != nil):
		return store.Inbox{}, Invalidf("address", "Give either address or username and domain, not both.")
	case in.Address != nil:
		address = *in.Address
	case in.Username != nil && in.Domain != nil:
		address = *in.Username + "@" + *in.Domain
	default:
		return store.Inbox{}, Invalidf("address", "address (or username and domain) is required.")
	}
	if !store.ValidInboxAddress(address) {
		return store.Inbox{}, Invalidf("address", "address %q is not a valid inbox address (user@domain, no +tag).", address)
	}
	env := "live"
	if in.Environment != nil {
		env = *in.Environment
	}
	if env != "live" && env != "test" {
		return store.Inbox{}, Invalidf("environment", "environment must be live or test.")
	}
	if err := in.validatePatchable(); err != nil {
		return store.Inbox{}, err
	}
	ni := store.NewInbox{Address: address, Environment: env, DisplayName: in.DisplayName.V,
		SendPolicy: in.SendPolicy.V, AllowedDomains: in.AllowedDomains.V}
	ib, err := a.db.CreateInbox(ctx, c.ProjectID, ni)
	if errors.Is(err, store.ErrConflict) {
		return store.Inbox{}, &Error{Code: EConflict, Message: "An inbox with this address already exists.", Param: "address"}
	}
	return ib, err
}

// UpdateInbox changes an inbox of the caller's grant: its display name,
// send policy and allowed domains; its address and environment never
// change.
func (a *App) UpdateInbox(ctx context.Context, c Caller, inboxID string, decode Decoder) (store.Inbox, error) {
	if err := c.Need("inboxes:write"); err != nil {
		return store.Inbox{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return store.Inbox{}, err
	}
	var in InboxInput
	if err := decode(&in); err != nil {
		return store.Inbox{}, err
	}
	for name, set := range map[string]bool{"address": in.Address != nil, "username": in.Username != nil, "domain": in.Domain != nil, "environment": in.Environment != nil} {
		if set {
			return store.Inbox{}, Invalidf(name, "%s cannot be changed; create a new inbox instead.", name)
		}
	}
	if err := in.validatePatchable(); err != nil {
		return store.Inbox{}, err
	}
	return a.db.UpdateInbox(ctx, ib.ProjectID, ib.ID, store.InboxPatch{DisplayName: in.DisplayName.orEmpty(),
		SendPolicy: in.SendPolicy.Value(), AllowedDomains: in.AllowedDomains.Value()})
}

// DeleteInbox deletes an inbox of the caller's grant, and all its data;
// it returns the inbox as it was.
func (a *App) DeleteInbox(ctx context.Context, c Caller, inboxID string) (store.Inbox, error) {
	if err := c.Need("inboxes:write"); err != nil {
		return store.Inbox{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return store.Inbox{}, err
	}
	if err := a.db.DeleteInbox(ctx, ib.ProjectID, ib.ID); err != nil {
		return store.Inbox{}, err
	}
	return ib, nil
}
