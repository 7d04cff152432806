package app

import (
	"context"
	"errors"
	"time"

	"github.com/inboxd/inboxd/store"
)

// The approvals of SPEC §7: a send held for a person to decide. Reading
// them takes approvals:read; deciding takes approvals:write, which a key
// that sends (messages:send) does not hold by that alone, so an agent can
// never approve its own draft.

// ListApprovals is a page of an inbox's approvals, newest first.
func (a *App) ListApprovals(ctx context.Context, c Caller, inboxID string, p PageParams) (Page[store.Approval], error) {
	if err := c.Need("approvals:read"); err != nil {
		return Page[store.Approval]{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return Page[store.Approval]{}, err
	}
	return timeKeyPage(a, p, CursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "approvals"},
		func(after *store.TimeKey, n int) ([]store.Approval, error) {
			return a.db.ListApprovals(ctx, ib.ID, after, n)
		},
		func(ap store.Approval) (time.Time, string) { return ap.RequestedAt, ap.ID })
}

// Approval is one approval of an inbox of the caller's grant.
func (a *App) Approval(ctx context.Context, c Caller, inboxID, approvalID string) (store.Approval, error) {
	if err := c.Need("approvals:read"); err != nil {
		return store.Approval{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return store.Approval{}, err
	}
	return a.db.GetApproval(ctx, ib.ID, approvalID)
}

// Approve releases a pending approval: the exact draft is queued as it
// was when it was held. It takes no input: decode must find none, or {}.
func (a *App) Approve(ctx context.Context, c Caller, inboxID, approvalID string, decode Decoder) (store.Approval, error) {
	if err := c.Need("approvals:write"); err != nil {
		return store.Approval{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return store.Approval{}, err
	}
	var none struct{} // approve takes no input (SPEC §7): anything but {} is refused, not ignored
	if err := decode(&none); err != nil {
		return store.Approval{}, err
	}
	return a.decide(ctx, c, ib.ID, approvalID, true, "")
}

// RejectInput is the input of Reject; its reason is optional.
type RejectInput struct {
	Reason string `json:"reason"`
}

// Reject refuses a pending approval, with an optional reason; nothing is
// sent. A surface whose request carries no input at all passes a decoder
// that leaves the RejectInput as it is.
func (a *App) Reject(ctx context.Context, c Caller, inboxID, approvalID string, decode Decoder) (store.Approval, error) {
	if err := c.Need("approvals:write"); err != nil {
		return store.Approval{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return store.Approval{}, err
	}
	var in RejectInput
	if err := decode(&in); err != nil {
		return store.Approval{}, err
	}
	return a.decide(ctx, c, ib.ID, approvalID, false, in.Reason)
}

// decide records the caller's decision; an approval decided already, by
// anyone, is a conflict.
func (a *App) decide(ctx context.Context, c Caller, inboxID, approvalID string, approve bool, reason string) (store.Approval, error) {
	ap, err := a.db.Decide(ctx, inboxID, approvalID, c.ID, approve, reason)
	if errors.Is(err, store.ErrDecided) {
		return store.Approval{}, Errorf(EConflict, "This approval was already decided.")
	}
	return ap, err
}
