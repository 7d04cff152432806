package api

import (
	"net/http"
)

// testInbound runs a simulated message through the same ingest pipeline
// as SMTP (SPEC §10), into a test inbox only (app.TestInbound).
func (s *Server) testInbound(w http.ResponseWriter, r *http.Request) {
	d, err := s.app.TestInbound(r.Context(), callerFrom(r), s.decoder(w, r))
	switch {
	case err != nil:
		s.writeError(w, r, err)
	case d.Deferred:
		// Held, or a retry of a message that is still held.
		writeJSON(w, http.StatusAccepted, map[string]any{"result": "deferred"})
	case d.Duplicate:
		// The same message again: an SMTP retry would be answered
		// "Already stored as" and not stored twice (SPEC §4), and so is this.
		writeJSON(w, http.StatusOK, map[string]any{"result": "duplicate", "message_id": d.MessageID, "thread_id": d.ThreadID, "inbox_id": d.InboxID})
	default:
		writeJSON(w, http.StatusCreated, map[string]any{"message_id": d.MessageID, "thread_id": d.ThreadID, "inbox_id": d.InboxID})
	}
}
