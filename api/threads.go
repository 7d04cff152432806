package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/store"
)

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
	scope := app.CursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "threads", Query: q.String()}
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

func (s *Server) thread(r *http.Request) (store.Inbox, store.Thread, error) {
	k := callerFrom(r)
	id := chi.URLParam(r, "inbox_id")
	if !k.CanSee(id) {
		return store.Inbox{}, store.Thread{}, app.ErrNotFound
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
	k := callerFrom(r)
	inboxID := chi.URLParam(r, "inbox_id")
	cacheKey := strings.Join([]string{k.ProjectID, inboxID, chi.URLParam(r, "thread_id"), r.URL.RawQuery}, "\x00")
	wait, waitErr := waitParam(r)
	cacheable := waitErr == nil && wait == 0 && !r.URL.Query().Has("cursor")
	if cacheable && k.CanSee(inboxID) {
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
	scope := app.CursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "thread_messages", Thread: t.ID}
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
	pg, err := app.NewPage(s.app, msgs, limit, scope, func(m store.Message) any { return store.SeqKey{Seq: m.Sequence, ID: m.ID} })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := listOf(pg, func(m store.Message) threadMessageJSON {
		return threadMessageJSON{messageJSON: messageObject(m, ib.Environment, atts[m.ID], dels[m.ID]),
			Sequence: m.Sequence, DeliveryStatus: firstToStatus(dels[m.ID])}
	})
	body := appendJSONLine(nil, &out)
	if cacheable {
		s.pages.put(cacheKey, versionFrom(r), body, len(body))
	}
	writeBody(w, http.StatusOK, body)
}
