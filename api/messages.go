package api

import (
	"bufio"
	"context"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/message"
)

func (s *Server) inboxMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	msgs, err := s.app.InboxMessages(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"),
		app.InboxMessagesParams{PageParams: pageParams(r), Q: q.Get("q"), Direction: q.Get("direction")})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, msgs.Page, func(m app.Message) messageJSON {
		return messageObject(m, msgs.Inbox.Environment, msgs.Attachments[m.ID], msgs.Deliveries[m.ID])
	})
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	v, err := s.app.Message(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "message_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	o := messageObject(v.Message, v.Inbox.Environment, v.Attachments, v.Deliveries)
	writeJSON(w, http.StatusOK, &o)
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "message_id")
	if err := s.app.DeleteMessage(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

// getBody streams the body object from storage: each part is decompressed,
// sanitized (html) and JSON-escaped on its way to the client, so a request
// holds a piece of the packed body and some buffers, never the text
// (issue 13: 150 MB a request for a 19 MB message when it was built in
// memory). The fields
// are in encoding/json's order for the map this route used to encode, and
// every byte is what it wrote. A failure before the first 32 KB reach the
// client is still an error response; after, the answer is cut short and
// the failure logged.
func (s *Server) getBody(w http.ResponseWriter, r *http.Request) {
	b, err := s.app.MessageBody(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "message_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	sw := &startedWriter{w: w}
	bw := bufio.NewWriterSize(sw, 32<<10)
	if err = writeBodyJSON(r.Context(), bw, b.Parts, b.Message.RawStored, cidURLs(b)); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		if !sw.started {
			s.writeError(w, r, err)
			return
		}
		s.abortStream(r, "api: body stream failed", "message", b.Message.ID, "err", err)
	}
}

// writeBodyJSON writes {"body_available","extracted_text","html",
// "original_raw_available","text"} and a newline. w's errors are sticky:
// the caller's Flush reports one that only a WriteString saw.
func writeBodyJSON(ctx context.Context, w *bufio.Writer, b app.BodyParts, rawStored bool, cid func(string) (string, bool)) error {
	w.WriteString(`{"body_available":true,"extracted_text":`)
	if err := writeJSONString(w, copyPart(ctx, &b.ExtractedText)); err != nil {
		return err
	}
	w.WriteString(`,"html":`)
	if b.HTML == nil {
		w.WriteString("null")
	} else if err := writeJSONString(w, func(w io.Writer) error {
		r := b.HTML.Open(ctx)
		defer r.Close()
		// Sanitized again as it is served: the policy may have tightened
		// since it was stored.
		return message.SanitizeTo(w, r, cid)
	}); err != nil {
		return err
	}
	w.WriteString(`,"original_raw_available":` + strconv.FormatBool(rawStored) + `,"text":`)
	if b.Text == nil {
		w.WriteString("null")
	} else if err := writeJSONString(w, copyPart(ctx, b.Text)); err != nil {
		return err
	}
	w.WriteString("}\n")
	return nil
}

// copyPart copies a part's text to the writer it is given.
func copyPart(ctx context.Context, p *app.BodyPart) func(io.Writer) error {
	return func(w io.Writer) error {
		r := p.Open(ctx)
		defer r.Close()
		_, err := io.Copy(w, r)
		return err
	}
}

// cidURLs maps the Content-ID of each inline part of a body (app.Body's
// Inline) to the URL it is served at; nil when there is none.
func cidURLs(b app.Body) func(string) (string, bool) {
	if b.Inline == nil {
		return nil
	}
	prefix := "/v1/projects/" + b.Inbox.ProjectID + "/inboxes/" + b.Inbox.ID + "/messages/" + b.Message.ID + "/attachments/"
	return func(id string) (string, bool) {
		att, ok := b.Inline[id]
		if !ok {
			return "", false
		}
		return prefix + att, true
	}
}

func (s *Server) getRaw(w http.ResponseWriter, r *http.Request) {
	m, stream, err := s.app.RawMessage(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "message_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": m.ID + ".eml"}))
	sw := &startedWriter{w: w}
	if err := stream(sw); err != nil {
		if !sw.started {
			w.Header().Del("Content-Disposition")
			s.writeError(w, r, err)
			return
		}
		s.abortStream(r, "api: raw stream failed", "message", m.ID, "err", err)
	}
}

// abortStream ends a response that failed after its first bytes went
// out: it logs the failure (unless the client went away) and aborts the
// connection, so that the client sees a broken transfer, never what looks
// like a complete answer that was cut short.
func (s *Server) abortStream(r *http.Request, msg string, args ...any) {
	if r.Context().Err() == nil {
		s.log.Error(msg, args...)
	}
	panic(http.ErrAbortHandler)
}

// startedWriter records whether anything was written, so a failure before
// the first byte can still become a proper error response.
type startedWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *startedWriter) Write(p []byte) (int, error) {
	s.started = true
	return s.w.Write(p)
}

func (s *Server) getAttachment(w http.ResponseWriter, r *http.Request) {
	a, stream, err := s.app.Attachment(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "message_id"), chi.URLParam(r, "attachment_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name := a.Filename
	if name == "" {
		name = a.ID
	}
	w.Header().Set("Content-Type", a.ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	sw := &startedWriter{w: w}
	if err := stream(sw); err != nil {
		if !sw.started {
			w.Header().Del("Content-Disposition")
			s.writeError(w, r, err)
			return
		}
		s.abortStream(r, "api: attachment stream failed", "attachment", a.ID, "err", err)
	}
}
