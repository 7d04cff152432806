package api

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
)

type approvalJSON struct {
	ID          string    `json:"id"`
	DraftID     string    `json:"draft_id"`
	InboxID     string    `json:"inbox_id"`
	Status      string    `json:"status"`
	RequestedAt string    `json:"requested_at"`
	DecidedAt   *string   `json:"decided_at"`
	DecidedBy   *string   `json:"decided_by"`
	Reason      *string   `json:"reason"`
	Draft       draftJSON `json:"draft"`
	MessageID   *string   `json:"message_id"`
	ThreadID    *string   `json:"thread_id"`
}

type draftJSON struct {
	To          []addressJSON    `json:"to"`
	Cc          []addressJSON    `json:"cc"`
	Bcc         []addressJSON    `json:"bcc"`
	Subject     string           `json:"subject"`
	Text        *string          `json:"text"`
	HTML        *string          `json:"html"`
	Attachments []attachmentJSON `json:"attachments"`
}

func msgAddresses(as []message.Address) []addressJSON {
	out := make([]addressJSON, 0, len(as))
	for _, a := range as {
		out = append(out, addressJSON{Email: a.Email, Name: strOrNull(a.Name)})
	}
	return out
}

func approvalObject(a store.Approval) approvalJSON {
	p := message.Parse(a.Raw)
	d := draftJSON{
		To: msgAddresses(p.To), Cc: msgAddresses(p.Cc), Bcc: msgAddresses(a.Bcc), Subject: p.Subject,
		Attachments: make([]attachmentJSON, 0, len(p.Attachments)),
	}
	if p.HasText {
		d.Text = &p.Text
	}
	if p.HasHTML {
		d.HTML = &p.HTML
	}
	for _, at := range p.Attachments {
		d.Attachments = append(d.Attachments, attachmentJSON{
			Filename: strOrNull(at.Filename), Bytes: int64(len(at.Data)), ContentType: at.ContentType, Disposition: at.Disposition,
			ContentID: strOrNull(at.ContentID), ScanStatus: at.ScanStatus, Downloadable: false,
		})
	}
	return approvalJSON{
		ID: a.ID, DraftID: a.DraftID, InboxID: a.InboxID, Status: a.Status, RequestedAt: timeJSON(a.RequestedAt),
		DecidedAt: timePtr(a.DecidedAt), DecidedBy: a.DecidedBy, Reason: a.Reason, Draft: d,
		MessageID: a.MessageID, ThreadID: a.ThreadID,
	}
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	ib, err := s.inbox(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, err := listLimit(r, 25)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	scope := app.CursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "approvals"}
	after, err := cursorAfter[store.TimeKey](s, r, scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	as, err := s.db.ListApprovals(r.Context(), ib.ID, after, limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writePage(s, w, r, as, limit, scope, approvalObject,
		func(a store.Approval) any { return store.TimeKey{At: a.RequestedAt.UnixMilli(), ID: a.ID} })
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	ib, err := s.inbox(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.db.GetApproval(r.Context(), ib.ID, chi.URLParam(r, "approval_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalObject(a))
}

func (s *Server) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ib, err := s.inbox(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		var in struct {
			Reason string `json:"reason"`
		}
		if !approve && r.ContentLength != 0 {
			if err := s.decodeJSON(w, r, &in); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		a, err := s.db.Decide(r.Context(), ib.ID, chi.URLParam(r, "approval_id"), callerFrom(r).ID, approve, in.Reason)
		if errors.Is(err, store.ErrDecided) {
			s.writeError(w, r, app.Errorf(app.EConflict, "This approval was already decided."))
			return
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, approvalObject(a))
	}
}
