package api

import (
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
)

// send is POST …/inboxes/{inbox_id}/messages (app.Send). The body is read
// once, when app first asks for it: for the Idempotency-Key's request
// identity (inbox, path, body) and for the input.
func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	var body []byte
	var readErr error
	read := func() ([]byte, error) {
		if body == nil && readErr == nil {
			body, readErr = io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxSendBody))
			readErr = readError(readErr)
		}
		return body, readErr
	}
	var idem *app.Idempotency
	if keys, ok := r.Header["Idempotency-Key"]; ok {
		idem = &app.Idempotency{Param: "Idempotency-Key", Op: r.URL.Path, Request: read}
		if len(keys) == 1 {
			idem.Key = keys[0]
		}
	}
	res, err := s.app.Send(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), idem, func(v any) error {
		b, err := read()
		if err != nil {
			return err
		}
		return app.DecodeJSON(b, v)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusAccepted, sendObject(res))
}

// sendObject is the answer of a send (SPEC §6); a replay renders the
// stored result the same way, so it is the first answer byte for byte.
func sendObject(res app.SendResult) map[string]any {
	if res.Result == app.SendApprovalRequired {
		return map[string]any{"result": res.Result, "draft_id": res.DraftID, "approval_id": res.ApprovalID, "inbox_id": res.InboxID}
	}
	return map[string]any{"result": res.Result, "message_id": res.MessageID, "thread_id": res.ThreadID, "inbox_id": res.InboxID}
}
