package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
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
	To          []addressJSON     `json:"to"`
	Cc          []addressJSON     `json:"cc"`
	Bcc         []addressJSON     `json:"bcc"`
	ReplyTo     []addressJSON     `json:"reply_to"`
	Subject     *string           `json:"subject"`
	Headers     map[string]string `json:"headers"`
	Text        *string           `json:"text"`
	HTML        *string           `json:"html"`
	Attachments []attachmentJSON  `json:"attachments"`
}

func approvalObject(a app.Approval) approvalJSON {
	dr := app.DraftOf(a)
	d := draftJSON{
		To: addresses(dr.To), Cc: addresses(dr.Cc), Bcc: addresses(dr.Bcc), ReplyTo: addresses(dr.ReplyTo), Subject: strOrNull(dr.Subject),
		Headers: make(map[string]string, len(dr.Headers)), Text: dr.Text, HTML: dr.HTML, Attachments: make([]attachmentJSON, 0, len(dr.Attachments)),
	}
	for _, f := range dr.Headers {
		d.Headers[f.Name] = f.Value
	}
	for _, at := range dr.Attachments {
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
	page, err := s.app.ListApprovals(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), pageParams(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, approvalObject)
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	a, err := s.app.Approval(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "approval_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalObject(a))
}

// approve takes no body (SPEC §7): one of more than whitespace that is
// not {} is a client error, rather than a decision made on a request it
// misread.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	a, err := s.app.Approve(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "approval_id"), s.optionalDecoder(w, r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalObject(a))
}

// reject's body is optional: a request without one rejects with no
// reason.
func (s *Server) reject(w http.ResponseWriter, r *http.Request) {
	a, err := s.app.Reject(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "approval_id"), s.optionalDecoder(w, r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, approvalObject(a))
}
