package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/outbound"
	"github.com/inboxd/inboxd/store"
)

// addressInput accepts "a@b", "Name <a@b>" or {"email","name"}.
type addressInput message.Address

func (a *addressInput) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if name, email, ok := parseNamed(s); ok {
			*a = addressInput{Email: email, Name: name}
			return nil
		}
		*a = addressInput{Email: strings.TrimSpace(s)}
		return nil
	}
	var o struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return errors.New(`an address is "a@b", "Name <a@b>" or {"email","name"}`)
	}
	*a = addressInput{Email: o.Email, Name: o.Name}
	return nil
}

// parseNamed splits `Name <a@b>`.
func parseNamed(s string) (name, email string, ok bool) {
	s = strings.TrimSpace(s)
	i := strings.LastIndexByte(s, '<')
	if i < 0 || !strings.HasSuffix(s, ">") {
		return "", "", false
	}
	return strings.Trim(strings.TrimSpace(s[:i]), `"`), strings.TrimSpace(s[i+1 : len(s)-1]), true
}

func addressesOf(in []addressInput) []message.Address {
	out := make([]message.Address, len(in))
	for i, a := range in {
		out[i] = message.Address(a)
	}
	return out
}

type sendInput struct {
	To               []addressInput    `json:"to"`
	Cc               []addressInput    `json:"cc"`
	Bcc              []addressInput    `json:"bcc"`
	ReplyTo          []addressInput    `json:"reply_to"`
	Subject          *string           `json:"subject"`
	Text             string            `json:"text"`
	HTML             string            `json:"html"`
	Attachments      []attachmentInput `json:"attachments"`
	ReplyToMessageID string            `json:"reply_to_message_id"`
	Headers          map[string]string `json:"headers"`
}

type attachmentInput struct {
	Filename      string `json:"filename"`
	ContentType   string `json:"content_type"`
	ContentBase64 string `json:"content_base64"`
}

// inFlight tracks Idempotency-Keys whose first request is still running
// (SPEC §6: a second request meanwhile answers 503).
type inFlight struct {
	mu   sync.Mutex
	keys map[string]bool
}

func (f *inFlight) begin(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys[key] {
		return false
	}
	f.keys[key] = true
	return true
}

func (f *inFlight) end(key string) {
	f.mu.Lock()
	delete(f.keys, key)
	f.mu.Unlock()
}

func validIdempotencyKey(k string) bool {
	if len(k) < 1 || len(k) > 256 {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~:", r)) {
			return false
		}
	}
	return true
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	ib, err := s.inbox(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	k := keyFrom(r)
	var idem *store.Idempotency
	keyHeader, hasKey := r.Header["Idempotency-Key"]
	if hasKey {
		if len(keyHeader) != 1 || !validIdempotencyKey(keyHeader[0]) {
			s.writeError(w, r, badRequest("Idempotency-Key", "Idempotency-Key must be 1–256 characters of A-Z a-z 0-9 - . _ ~ :"))
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxSendBody))
	if err != nil {
		s.writeError(w, r, decodeError(err))
		return
	}
	if hasKey {
		// Canonical JSON: key order and whitespace do not matter.
		var v any
		canon := body
		if json.Unmarshal(body, &v) == nil {
			canon, _ = json.Marshal(v)
		}
		h := sha256.New()
		h.Write([]byte(ib.ID + "\x00" + r.URL.Path + "\x00"))
		h.Write(canon)
		idem = &store.Idempotency{Key: keyHeader[0], Hash: h.Sum(nil)}
		flight := k.ProjectID + "\x00" + keyHeader[0]
		if !s.flight.begin(flight) {
			s.writeError(w, r, &Error{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable", Message: "A matching send is already in progress."})
			return
		}
		defer s.flight.end(flight)
	}

	var in sendInput
	if err := decodeStrict(bytes.NewReader(body), &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	req := outbound.Request{
		ProjectID: k.ProjectID, Inbox: ib, To: addressesOf(in.To), Cc: addressesOf(in.Cc), Bcc: addressesOf(in.Bcc),
		ReplyTo: addressesOf(in.ReplyTo), Subject: in.Subject, Text: in.Text, HTML: in.HTML,
		ReplyToMessageID: in.ReplyToMessageID, Headers: in.Headers,
	}
	for i, a := range in.Attachments {
		data, err := base64.StdEncoding.DecodeString(a.ContentBase64)
		if err != nil {
			s.writeError(w, r, badRequest("attachments["+strconv.Itoa(i)+"].content_base64", "content_base64 is not valid base64."))
			return
		}
		req.Attachments = append(req.Attachments, outbound.Attachment{Filename: a.Filename, ContentType: a.ContentType, Data: data})
	}
	prep, err := s.sender.Prepare(r.Context(), req)
	var inv *outbound.InvalidError
	switch {
	case errors.As(err, &inv):
		s.writeError(w, r, badRequest(inv.Field, "%s: %s.", inv.Field, inv.Message))
		return
	case errors.Is(err, outbound.ErrTooLarge):
		s.writeError(w, r, errTooLarge)
		return
	case err != nil:
		s.writeError(w, r, err)
		return
	}
	res, err := s.db.Send(r.Context(), store.SendRequest{
		ProjectID: k.ProjectID, Idempotency: idem, Out: prep.Out, Hold: prep.Hold,
		Answer: func(res store.SendResult) (int, []byte, error) {
			var v any = map[string]any{"result": "queued", "message_id": res.MessageID, "thread_id": res.ThreadID, "inbox_id": res.InboxID}
			if res.ApprovalID != "" {
				v = map[string]any{"result": "approval_required", "draft_id": res.DraftID, "approval_id": res.ApprovalID, "inbox_id": res.InboxID}
			}
			b, err := json.Marshal(v)
			return http.StatusAccepted, append(b, '\n'), err
		},
	})
	switch {
	case errors.Is(err, store.ErrIdempotencyConflict):
		s.writeError(w, r, &Error{Status: http.StatusConflict, Code: "idempotency_conflict", Message: "This Idempotency-Key was used with a different request.", Param: "Idempotency-Key"})
		return
	case errors.Is(err, store.ErrIdempotencyExpired):
		s.writeError(w, r, &Error{Status: http.StatusUnprocessableEntity, Code: "idempotency_expired", Message: "This Idempotency-Key is older than 30 days; use a new key.", Param: "Idempotency-Key"})
		return
	case err != nil:
		s.writeError(w, r, err)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(res.Status)
	w.Write(res.Body)
}

// --- approvals ---

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
	scope := cursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "approvals"}
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
		a, err := s.db.Decide(r.Context(), ib.ID, chi.URLParam(r, "approval_id"), keyFrom(r).ID, approve, in.Reason)
		if errors.Is(err, store.ErrDecided) {
			s.writeError(w, r, &Error{Status: http.StatusConflict, Code: "conflict", Message: "This approval was already decided."})
			return
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, approvalObject(a))
	}
}
