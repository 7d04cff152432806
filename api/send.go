package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/outbound"
	"github.com/inboxd/inboxd/store"
)

type sendInput struct {
	To               []app.AddressInput    `json:"to"`
	Cc               []app.AddressInput    `json:"cc"`
	Bcc              []app.AddressInput    `json:"bcc"`
	ReplyTo          []app.AddressInput    `json:"reply_to"`
	Subject          *string               `json:"subject"`
	Text             string                `json:"text"`
	HTML             string                `json:"html"`
	Attachments      []app.AttachmentInput `json:"attachments"`
	ReplyToMessageID string                `json:"reply_to_message_id"`
	Headers          map[string]string     `json:"headers"`
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
	k := callerFrom(r)
	var idem *store.Idempotency
	keyHeader, hasKey := r.Header["Idempotency-Key"]
	if hasKey {
		if len(keyHeader) != 1 || !validIdempotencyKey(keyHeader[0]) {
			s.writeError(w, r, app.Invalidf("Idempotency-Key", "Idempotency-Key must be 1–256 characters of A-Z a-z 0-9 - . _ ~ :"))
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
			s.writeError(w, r, app.Errorf(app.ETemporarilyUnavailable, "A matching send is already in progress."))
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
		ProjectID: k.ProjectID, Inbox: ib, To: app.AddressesOf(in.To), Cc: app.AddressesOf(in.Cc), Bcc: app.AddressesOf(in.Bcc),
		ReplyTo: app.AddressesOf(in.ReplyTo), Subject: in.Subject, Text: in.Text, HTML: in.HTML,
		ReplyToMessageID: in.ReplyToMessageID, Headers: in.Headers,
	}
	for i, a := range in.Attachments {
		data, err := a.Data(i)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		req.Attachments = append(req.Attachments, outbound.Attachment{Filename: a.Filename, ContentType: a.ContentType, Data: data})
	}
	prep, err := s.sender.Prepare(r.Context(), req)
	var inv *outbound.InvalidError
	switch {
	case errors.As(err, &inv):
		s.writeError(w, r, app.Invalidf(inv.Field, "%s: %s.", inv.Field, inv.Message))
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
		s.writeError(w, r, &app.Error{Code: app.EIdempotencyConflict, Message: "This Idempotency-Key was used with a different request.", Param: "Idempotency-Key"})
		return
	case errors.Is(err, store.ErrIdempotencyExpired):
		s.writeError(w, r, &app.Error{Code: app.EIdempotencyExpired, Message: "This Idempotency-Key is older than 30 days; use a new key.", Param: "Idempotency-Key"})
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
