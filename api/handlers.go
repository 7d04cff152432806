package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/message"
	"github.com/inboxd/inboxd/store"
)

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	k := keyFrom(r)
	writeJSON(w, http.StatusOK, map[string]any{"key_id": k.ID, "project_id": k.ProjectID, "scopes": k.Scopes, "inbox_ids": k.InboxIDs})
}

// --- inboxes ---

func (s *Server) listInboxes(w http.ResponseWriter, r *http.Request) {
	k := keyFrom(r)
	writeGrantedPage(s, w, r, "inboxes",
		func(after *store.TimeKey, n int) ([]store.Inbox, error) {
			return s.db.InboxesAfter(r.Context(), k.ProjectID, after, n)
		},
		func(ib store.Inbox) bool { return canSee(k, ib.ID) }, inboxObject,
		func(ib store.Inbox) (time.Time, string) { return ib.CreatedAt, ib.ID })
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
		return badRequest("display_name", "display_name must not contain line breaks.")
	}
	if in.SendPolicy != nil && !slices.Contains(sendPolicies, *in.SendPolicy) {
		return badRequest("send_policy", "send_policy must be allow, approve_all or approve_external.")
	}
	if in.AllowedDomains != nil {
		for _, d := range *in.AllowedDomains {
			if !validDomain(d) {
				return badRequest("allowed_domains", "allowed_domains holds an invalid domain %q.", d)
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
		s.writeError(w, r, badRequest("address", "Give either address or username and domain, not both."))
		return
	case in.Address != nil:
		address = *in.Address
	case in.Username != nil && in.Domain != nil:
		address = *in.Username + "@" + *in.Domain
	default:
		s.writeError(w, r, badRequest("address", "address (or username and domain) is required."))
		return
	}
	a, err := mail.ParseAddress(address)
	local, domain, ok := strings.Cut(address, "@")
	if err != nil || a.Address != address || !ok || local == "" || strings.Contains(local, "+") || !validDomain(domain) {
		s.writeError(w, r, badRequest("address", "address %q is not a valid inbox address (user@domain, no +tag).", address))
		return
	}
	env := "live"
	if in.Environment != nil {
		env = *in.Environment
	}
	if env != "live" && env != "test" {
		s.writeError(w, r, badRequest("environment", "environment must be live or test."))
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
	ib, err := s.db.CreateInbox(r.Context(), keyFrom(r).ProjectID, ni)
	if errors.Is(err, store.ErrConflict) {
		s.writeError(w, r, &Error{Status: http.StatusConflict, Code: "conflict", Message: "An inbox with this address already exists.", Param: "address"})
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
			s.writeError(w, r, badRequest(name, "%s cannot be changed; create a new inbox instead.", name))
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

// --- threads and messages ---

func (s *Server) listThreads(w http.ResponseWriter, r *http.Request) {
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
	q, err := searchParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	scope := cursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "threads", Query: q.String()}
	after, err := cursorAfter[store.TimeKey](s, r, scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	threads, err := s.db.ListThreads(r.Context(), ib.ID, q, after, limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writePage(s, w, r, threads, limit, scope, threadObject,
		func(t store.Thread) any { return store.TimeKey{At: t.LastMessageAt.UnixMilli(), ID: t.ID} })
}

// writePage answers a list fetched with limit+1 rows: the first limit
// rendered, has_more exact, and next_cursor the signed position of the last
// row shown.
func writePage[R, T any](s *Server, w http.ResponseWriter, r *http.Request, rows []R, limit int, scope cursorScope,
	render func(R) T, position func(R) any) {
	out, err := buildPage(s, rows, limit, scope, render, position)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, ok := any((*T)(nil)).(jsonAppender); ok {
		writeJSON(w, http.StatusOK, &out) // the list's appendJSON needs elements that append themselves
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// writeGrantedPage answers a page of one of the project's own lists
// (inboxes, keys, webhook endpoints), oldest first by created_at, holding
// only the rows the key's grant covers (visible). fetch reads n rows after
// a position; rows outside the grant are skipped and more are read in
// their place, so a page is full and has_more exact whatever the key may
// not see.
func writeGrantedPage[R, T any](s *Server, w http.ResponseWriter, r *http.Request, list string,
	fetch func(after *store.TimeKey, n int) ([]R, error), visible func(R) bool, render func(R) T, created func(R) (time.Time, string)) {
	position := func(row R) store.TimeKey {
		at, id := created(row)
		return store.TimeKey{At: at.UnixMilli(), ID: id}
	}
	limit, err := listLimit(r, 25)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	scope := cursorScope{Project: keyFrom(r).ProjectID, List: list}
	after, err := cursorAfter[store.TimeKey](s, r, scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var rows []R
	for len(rows) <= limit {
		batch, err := fetch(after, limit+1)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		for _, row := range batch {
			if visible(row) && len(rows) <= limit {
				rows = append(rows, row)
			}
		}
		if len(batch) <= limit {
			break // the end of the list
		}
		p := position(batch[len(batch)-1])
		after = &p
	}
	writePage(s, w, r, rows, limit, scope, render, func(row R) any { return position(row) })
}

// buildPage is writePage's list object.
func buildPage[R, T any](s *Server, rows []R, limit int, scope cursorScope, render func(R) T, position func(R) any) (listJSON[T], error) {
	out := listJSON[T]{Data: make([]T, 0, min(len(rows), limit))}
	for _, row := range rows[:min(len(rows), limit)] {
		out.Data = append(out.Data, render(row))
	}
	if len(rows) > limit {
		out.HasMore = true
		if err := s.setCursor(&out.NextCursor, scope, position(rows[limit-1])); err != nil {
			return listJSON[T]{}, err
		}
	}
	return out, nil
}

// poll runs query until it finds something or wait runs out (wait 0:
// once). The change signal is taken before each query, so a commit between
// the query and the wait is never missed; waiters are woken by commits,
// never by polling the database.
func (s *Server) poll(r *http.Request, wait time.Duration, query func() (found bool, err error)) error {
	var deadline <-chan time.Time
	if wait > 0 {
		s.log.Debug("api: long-poll", "path", r.URL.Path, "wait", wait)
		timer := time.NewTimer(wait)
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		changed := s.db.Changed()
		found, err := query()
		if err != nil || found || deadline == nil {
			return err
		}
		if s.pollWaiting != nil {
			s.pollWaiting()
		}
		select {
		case <-changed:
		case <-deadline:
			return nil
		case <-s.draining:
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
}

// cursorAfter decodes the ?cursor= of a list into its keyset position (nil when
// absent).
func cursorAfter[K any](s *Server, r *http.Request, scope cursorScope) (*K, error) {
	c := r.URL.Query().Get("cursor")
	if c == "" {
		return nil, nil
	}
	k := new(K)
	if err := s.decodeCursor(c, scope, k); err != nil {
		return nil, err
	}
	return k, nil
}

func (s *Server) setCursor(dst **string, scope cursorScope, key any) error {
	c, err := s.encodeCursor(scope, key)
	if err != nil {
		return err
	}
	*dst = &c
	return nil
}

func searchParam(r *http.Request) (store.Query, error) {
	q, err := store.ParseQuery(r.URL.Query().Get("q"))
	switch {
	case errors.Is(err, store.ErrQueryNotUTF8):
		return store.Query{}, badRequest("q", "q must be UTF-8 text.")
	case err != nil:
		return store.Query{}, badRequest("q", "q has an unbalanced double quote.")
	}
	return q, nil
}

func (s *Server) thread(r *http.Request) (store.Inbox, store.Thread, error) {
	k := keyFrom(r)
	id := chi.URLParam(r, "inbox_id")
	if !canSee(k, id) {
		return store.Inbox{}, store.Thread{}, errNotFound
	}
	return s.db.GetInboxThread(r.Context(), k.ProjectID, id, chi.URLParam(r, "thread_id"))
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) {
	_, t, err := s.thread(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	o := threadObject(t)
	writeJSON(w, http.StatusOK, &o)
}

func (s *Server) threadMessages(w http.ResponseWriter, r *http.Request) {
	// A page asked for without waiting is the same for as long as the
	// database is: served from s.pages while its version holds. Only a
	// request that succeeded put it there, so its checks passed for the
	// same project, inbox, thread and parameters; the key's grant is
	// checked again. Pages asked for with a cursor are not cached: the
	// cursor's own expiry must be checked at every request.
	k := keyFrom(r)
	inboxID := chi.URLParam(r, "inbox_id")
	cacheKey := strings.Join([]string{k.ProjectID, inboxID, chi.URLParam(r, "thread_id"), r.URL.RawQuery}, "\x00")
	wait, waitErr := waitParam(r)
	cacheable := waitErr == nil && wait == 0 && !r.URL.Query().Has("cursor")
	if cacheable && canSee(k, inboxID) {
		if body, ok := s.pages.get(cacheKey, versionFrom(r)); ok {
			writeBody(w, http.StatusOK, body)
			return
		}
	}
	ib, t, err := s.thread(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit, err := listLimit(r, 50)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if waitErr != nil {
		s.writeError(w, r, waitErr)
		return
	}
	afterSeq, err := intParam(r, "after_sequence")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	scope := cursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "thread_messages", Thread: t.ID}
	after, err := cursorAfter[store.SeqKey](s, r, scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var msgs []store.Message
	err = s.poll(r, wait, func() (bool, error) {
		msgs, err = s.db.ThreadPage(r.Context(), t.ID, after, afterSeq, limit+1)
		return len(msgs) > 0, err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page := msgs[:min(limit, len(msgs))]
	atts, dels, err := s.extras(r, page, t.MayHaveAttachments(page))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := buildPage(s, msgs, limit, scope,
		func(m store.Message) threadMessageJSON {
			return threadMessageJSON{messageJSON: messageObject(m, ib.Environment, atts[m.ID], dels[m.ID]),
				Sequence: m.Sequence, DeliveryStatus: firstToStatus(dels[m.ID])}
		},
		func(m store.Message) any { return store.SeqKey{Seq: m.Sequence, ID: m.ID} })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body := appendJSONLine(nil, &out)
	if cacheable {
		s.pages.put(cacheKey, versionFrom(r), body, len(body))
	}
	writeBody(w, http.StatusOK, body)
}

// extras loads the attachments of a page of messages (unless none of them
// can have any), and the recipients' delivery statuses of its outbound
// ones, in up to two queries.
func (s *Server) extras(r *http.Request, page []store.Message, attachments bool) (map[string][]store.Attachment, map[string][]store.DeliveryStatus, error) {
	var ids, out []string
	for _, m := range page {
		if attachments {
			ids = append(ids, m.ID)
		}
		if m.Direction == "outbound" {
			out = append(out, m.ID)
		}
	}
	atts, err := s.db.AttachmentsOf(r.Context(), ids)
	if err != nil {
		return nil, nil, err
	}
	dels, err := s.db.DeliveriesOf(r.Context(), out)
	return atts, dels, err
}

func (s *Server) inboxMessages(w http.ResponseWriter, r *http.Request) {
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
	q, err := searchParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	direction := r.URL.Query().Get("direction")
	if direction != "" && direction != "inbound" && direction != "outbound" {
		s.writeError(w, r, badRequest("direction", "direction must be inbound or outbound."))
		return
	}
	scope := cursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "inbox_messages", Query: q.String(), Extra: direction}
	after, err := cursorAfter[store.TimeKey](s, r, scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	msgs, err := s.db.InboxPage(r.Context(), ib.ID, q, direction, after, limit+1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	atts, dels, err := s.extras(r, msgs[:min(limit, len(msgs))], true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writePage(s, w, r, msgs, limit, scope,
		func(m store.Message) messageJSON { return messageObject(m, ib.Environment, atts[m.ID], dels[m.ID]) },
		func(m store.Message) any { return store.TimeKey{At: m.CreatedAt.UnixMilli(), ID: m.ID} })
}

// message loads the {message_id} of the path; deleted messages are not
// found.
func (s *Server) message(r *http.Request) (store.Inbox, store.Message, error) {
	ib, err := s.inbox(r)
	if err != nil {
		return store.Inbox{}, store.Message{}, err
	}
	m, err := s.db.GetMessage(r.Context(), ib.ID, chi.URLParam(r, "message_id"))
	if err == nil && m.Deleted {
		err = errNotFound
	}
	return ib, m, err
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	ib, m, err := s.message(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	atts, dels, err := s.extras(r, []store.Message{m}, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	o := messageObject(m, ib.Environment, atts[m.ID], dels[m.ID])
	writeJSON(w, http.StatusOK, &o)
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) {
	ib, m, err := s.message(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.db.DeleteMessage(r.Context(), ib.ID, m.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": m.ID, "deleted": true})
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
	ib, m, err := s.message(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.db.OpenBody(r.Context(), m.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var cid func(string) (string, bool)
	if b.HTML != nil {
		atts, err := s.db.Attachments(r.Context(), m.ID)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		cid = cidURLs(ib, m.ID, atts)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	sw := &startedWriter{w: w}
	bw := bufio.NewWriterSize(sw, 32<<10)
	if err = writeBodyJSON(r.Context(), bw, b, m.RawStored, cid); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		if !sw.started {
			s.writeError(w, r, err)
			return
		}
		s.abortStream(r, "api: body stream failed", "message", m.ID, "err", err)
	}
}

// writeBodyJSON writes {"body_available","extracted_text","html",
// "original_raw_available","text"} and a newline. w's errors are sticky:
// the caller's Flush reports one that only a WriteString saw.
func writeBodyJSON(ctx context.Context, w *bufio.Writer, b store.BodyParts, rawStored bool, cid func(string) (string, bool)) error {
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
func copyPart(ctx context.Context, p *store.BodyPart) func(io.Writer) error {
	return func(w io.Writer) error {
		r := p.Open(ctx)
		defer r.Close()
		_, err := io.Copy(w, r)
		return err
	}
}

// cidURLs maps the Content-ID of each clean part to the URL it is served
// at (the first part wins a Content-ID used twice); nil when there is none.
func cidURLs(ib store.Inbox, messageID string, atts []store.Attachment) func(string) (string, bool) {
	urls := map[string]string{}
	for _, a := range atts {
		if _, dup := urls[a.ContentID]; a.ContentID != "" && a.ScanStatus == "clean" && !dup {
			urls[a.ContentID] = "/v1/projects/" + ib.ProjectID + "/inboxes/" + ib.ID + "/messages/" + messageID + "/attachments/" + a.ID
		}
	}
	if len(urls) == 0 {
		return nil
	}
	return func(id string) (string, bool) {
		u, ok := urls[id]
		return u, ok
	}
}

func (s *Server) getRaw(w http.ResponseWriter, r *http.Request) {
	_, m, err := s.message(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": m.ID + ".eml"}))
	sw := &startedWriter{w: w}
	if err := s.db.WriteRaw(r.Context(), sw, m.ID); err != nil {
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
	_, m, err := s.message(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.db.AttachmentOf(r.Context(), m.ID, chi.URLParam(r, "attachment_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if a.ScanStatus != "clean" {
		s.writeError(w, r, &Error{Status: http.StatusForbidden, Code: "permission_denied",
			Message: "This attachment is not downloadable (scan_status " + a.ScanStatus + ")."})
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
	if err := s.db.WriteAttachment(r.Context(), sw, a.ID); err != nil {
		if !sw.started {
			w.Header().Del("Content-Disposition")
			s.writeError(w, r, err)
			return
		}
		s.abortStream(r, "api: attachment stream failed", "attachment", a.ID, "err", err)
	}
}

// --- keys ---

// A key with keys:write sees, lists and revokes only the keys its own
// grant covers (coversKey): any other answers exactly like a key that does
// not exist (SPEC §5.1).

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	k := keyFrom(r)
	writeGrantedPage(s, w, r, "keys",
		func(after *store.TimeKey, n int) ([]store.Key, error) {
			return s.db.KeysAfter(r.Context(), k.ProjectID, after, n)
		},
		func(other store.Key) bool { return coversKey(k, other) }, keyObject,
		func(other store.Key) (time.Time, string) { return other.CreatedAt, other.ID })
}

// createKey refuses, with a 400 naming the field, a grant wider than the
// caller's own: the key asked for does not exist yet, so there is nothing
// to answer 404 about (the 404 of SPEC §5.1 is for existing keys).
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name     string       `json:"name"`
		Scopes   []string     `json:"scopes"`
		InboxIDs optionalList `json:"inbox_ids"`
	}
	if err := s.decodeJSON(w, r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(in.Scopes) == 0 {
		s.writeError(w, r, badRequest("scopes", "scopes must list at least one scope."))
		return
	}
	for _, sc := range in.Scopes {
		if !slices.Contains(store.AllScopes(), sc) {
			s.writeError(w, r, badRequest("scopes", "Unknown scope %q.", sc))
			return
		}
	}
	k := keyFrom(r)
	// A key can hand out only what it holds.
	for _, sc := range in.Scopes {
		if !k.Has(sc) {
			s.writeError(w, r, badRequest("scopes", "Cannot grant scope %q: this key does not hold it.", sc))
			return
		}
	}
	inboxes := in.InboxIDs.IDs
	switch {
	case !in.InboxIDs.Set:
		inboxes = k.InboxIDs // left out: the caller's own inboxes
	case inboxes == nil && k.InboxIDs != nil:
		s.writeError(w, r, badRequest("inbox_ids", "This key is restricted to some inboxes: inbox_ids must list them."))
		return
	}
	// A restricted key cannot mint a key for inboxes it cannot see.
	for _, id := range inboxes {
		if !canSee(k, id) {
			s.writeError(w, r, badRequest("inbox_ids", "Unknown inbox %q.", id))
			return
		}
	}
	nk, token, err := s.db.CreateKey(r.Context(), k.ProjectID, in.Name, in.Scopes, inboxes)
	if errors.Is(err, store.ErrNotFound) {
		s.writeError(w, r, badRequest("inbox_ids", "inbox_ids names an inbox that does not exist."))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		keyJSON
		Token string `json:"token"`
	}{keyObject(nk), token})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	k := keyFrom(r)
	id := chi.URLParam(r, "key_id")
	// A key's scopes and inboxes never change: checked here, they still
	// hold when it is revoked.
	other, err := s.db.GetKey(r.Context(), k.ProjectID, id)
	if err == nil && !coversKey(k, other) {
		err = errNotFound
	}
	if err == nil {
		err = s.db.RevokeKey(r.Context(), k.ProjectID, id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "revoked": true})
}
