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

	"github.com/inboxd/inboxd/app"
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
		ProjectID: k.ProjectID, Inbox: ib, To: addressesOf(in.To), Cc: addressesOf(in.Cc), Bcc: addressesOf(in.Bcc),
		ReplyTo: addressesOf(in.ReplyTo), Subject: in.Subject, Text: in.Text, HTML: in.HTML,
		ReplyToMessageID: in.ReplyToMessageID, Headers: in.Headers,
	}
	for i, a := range in.Attachments {
		data, err := base64.StdEncoding.DecodeString(a.ContentBase64)
		if err != nil {
			s.writeError(w, r, app.Invalidf("attachments["+strconv.Itoa(i)+"].content_base64", "content_base64 is not valid base64."))
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
