package api

import (
	"errors"
	"net/http"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

func (s *Server) listInboxes(w http.ResponseWriter, r *http.Request) {
	k := callerFrom(r)
	page, err := app.GrantedPage(s.app, k, "inboxes", pageParams(r),
		func(after *store.TimeKey, n int) ([]store.Inbox, error) {
			return s.db.InboxesAfter(r.Context(), k.ProjectID, after, n)
		},
		func(ib store.Inbox) bool { return k.CanSee(ib.ID) },
		func(ib store.Inbox) (time.Time, string) { return ib.CreatedAt, ib.ID })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, inboxObject)
}

type inboxInput struct {
	Address        *string   `json:"address"`
	Username       *string   `json:"username"`
	Domain         *string   `json:"domain"`
	DisplayName    *string   `json:"display_name"`
	Environment    *string   `json:"environment"`
	SendPolicy     *string   `json:"send_policy"`
	AllowedDomains *[]string `json:"allowed_domains"`
}

var sendPolicies = []string{"allow", "approve_all", "approve_external"}

func validDomain(d string) bool {
	return d != "" && !strings.ContainsAny(d, " \t\r\n@<>\"") && !strings.HasPrefix(d, ".") && !strings.HasSuffix(d, ".")
}

func (in *inboxInput) validatePatchable() error {
	if in.DisplayName != nil && strings.ContainsAny(*in.DisplayName, "\r\n") {
		return app.Invalidf("display_name", "display_name must not contain line breaks.")
	}
	if in.SendPolicy != nil && !slices.Contains(sendPolicies, *in.SendPolicy) {
		return app.Invalidf("send_policy", "send_policy must be allow, approve_all or approve_external.")
	}
	if in.AllowedDomains != nil {
		for _, d := range *in.AllowedDomains {
			if !validDomain(d) {
				return app.Invalidf("allowed_domains", "allowed_domains holds an invalid domain %q.", d)
			}
		}
	}
	return nil
}

func (s *Server) createInbox(w http.ResponseWriter, r *http.Request) {
	var in inboxInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	var address string
	switch {
	case in.Address != nil && (in.Username != nil || in.Domain != nil):
		s.writeError(w, r, app.Invalidf("address", "Give either address or username and domain, not both."))
		return
	case in.Address != nil:
		address = *in.Address
	case in.Username != nil && in.Domain != nil:
		address = *in.Username + "@" + *in.Domain
	default:
		s.writeError(w, r, app.Invalidf("address", "address (or username and domain) is required."))
		return
	}
	a, err := mail.ParseAddress(address)
	local, domain, ok := strings.Cut(address, "@")
	if err != nil || a.Address != address || !ok || local == "" || strings.Contains(local, "+") || !validDomain(domain) {
		s.writeError(w, r, app.Invalidf("address", "address %q is not a valid inbox address (user@domain, no +tag).", address))
		return
	}
	env := "live"
	if in.Environment != nil {
		env = *in.Environment
	}
	if env != "live" && env != "test" {
		s.writeError(w, r, app.Invalidf("environment", "environment must be live or test."))
		return
	}
	if err := in.validatePatchable(); err != nil {
		s.writeError(w, r, err)
		return
	}
	ni := store.NewInbox{Address: address, Environment: env}
	if in.DisplayName != nil {
		ni.DisplayName = *in.DisplayName
	}
	if in.SendPolicy != nil {
		ni.SendPolicy = *in.SendPolicy
	}
	if in.AllowedDomains != nil {
		ni.AllowedDomains = *in.AllowedDomains
	}
	ib, err := s.db.CreateInbox(r.Context(), callerFrom(r).ProjectID, ni)
	if errors.Is(err, store.ErrConflict) {
		s.writeError(w, r, &app.Error{Code: app.EConflict, Message: "An inbox with this address already exists.", Param: "address"})
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, inboxObject(ib))
}

func (s *Server) getInbox(w http.ResponseWriter, r *http.Request) {
	ib, err := s.inbox(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inboxObject(ib))
}

func (s *Server) updateInbox(w http.ResponseWriter, r *http.Request) {
	ib, err := s.inbox(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in inboxInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	for name, set := range map[string]bool{"address": in.Address != nil, "username": in.Username != nil, "domain": in.Domain != nil, "environment": in.Environment != nil} {
		if set {
			s.writeError(w, r, app.Invalidf(name, "%s cannot be changed; create a new inbox instead.", name))
			return
		}
	}
	if err := in.validatePatchable(); err != nil {
		s.writeError(w, r, err)
		return
	}
	ib, err = s.db.UpdateInbox(r.Context(), ib.ProjectID, ib.ID, store.InboxPatch{DisplayName: in.DisplayName, SendPolicy: in.SendPolicy, AllowedDomains: in.AllowedDomains})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inboxObject(ib))
}

func (s *Server) deleteInbox(w http.ResponseWriter, r *http.Request) {
	ib, err := s.inbox(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.db.DeleteInbox(r.Context(), ib.ProjectID, ib.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": ib.ID, "deleted": true})
}
