package api

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/inboxd/inboxd/app"
)

func (s *Server) listThreads(w http.ResponseWriter, r *http.Request) {
	page, err := s.app.ListThreads(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"),
		app.ThreadsParams{PageParams: pageParams(r), Q: r.URL.Query().Get("q")})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeList(w, page, threadObject)
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) {
	t, err := s.app.Thread(r.Context(), callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "thread_id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	o := threadObject(t)
	writeJSON(w, http.StatusOK, &o)
}

// threadMessages answers a page of a thread's messages. A page that is a
// function of the database alone (read.Cacheable: no wait, no cursor) is
// the same for as long as the database is: it is served from s.pages
// while its version holds. The cache is api's because what it keeps is
// the rendered bytes; it is found only by read.CacheKey, which app gives
// only once its checks (scope, grant) have passed for this request, so a
// cached page is never served to a key that could not read it.
func (s *Server) threadMessages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	read, err := s.app.ThreadMessages(callerFrom(r), chi.URLParam(r, "inbox_id"), chi.URLParam(r, "thread_id"),
		app.ThreadMessagesParams{PageParams: pageParams(r), AfterSequence: q.Get("after_sequence"), Wait: q.Get("wait")})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cacheable := read.Cacheable()
	if cacheable {
		if body, ok := s.pages.get(read.CacheKey(), versionFrom(r)); ok {
			writeBody(w, http.StatusOK, body)
			return
		}
	}
	msgs, err := read.Page(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := listOf(msgs.Page, func(m app.Message) threadMessageJSON {
		dels := msgs.Deliveries[m.ID]
		return threadMessageJSON{messageJSON: messageObject(m, msgs.Inbox.Environment, msgs.Attachments[m.ID], dels),
			Sequence: m.Sequence, DeliveryStatus: firstToStatus(dels)}
	})
	body := appendJSONLine(nil, &out)
	if cacheable {
		s.pages.put(read.CacheKey(), versionFrom(r), body, len(body))
	}
	writeBody(w, http.StatusOK, body)
}

type threadJSON struct {
	ID                   string  `json:"id"`
	InboxID              string  `json:"inbox_id"`
	Subject              *string `json:"subject"`
	Preview              *string `json:"preview"`
	MessageCount         int64   `json:"message_count"`
	LastMessageAt        string  `json:"last_message_at"`
	LastMessageDirection string  `json:"last_message_direction"`
	CreatedAt            string  `json:"created_at"`
}

func (t *threadJSON) appendJSON(b []byte) []byte {
	b = appendString(append(b, `{"id":`...), t.ID)
	b = appendString(append(b, `,"inbox_id":`...), t.InboxID)
	b = appendStringOrNull(append(b, `,"subject":`...), t.Subject)
	b = appendStringOrNull(append(b, `,"preview":`...), t.Preview)
	b = strconv.AppendInt(append(b, `,"message_count":`...), t.MessageCount, 10)
	b = appendString(append(b, `,"last_message_at":`...), t.LastMessageAt)
	b = appendString(append(b, `,"last_message_direction":`...), t.LastMessageDirection)
	b = appendString(append(b, `,"created_at":`...), t.CreatedAt)
	return append(b, '}')
}

func threadObject(t app.Thread) threadJSON {
	return threadJSON{
		ID: t.ID, InboxID: t.InboxID, Subject: strOrNull(t.Subject), Preview: strOrNull(t.Preview), MessageCount: t.MessageCount,
		LastMessageAt: timeJSON(t.LastMessageAt), LastMessageDirection: t.LastMessageDirection, CreatedAt: timeJSON(t.CreatedAt),
	}
}

// threadMessageJSON is the message object of the thread-messages route,
// the only one that carries sequence and delivery_status.
type threadMessageJSON struct {
	messageJSON
	Sequence       int64   `json:"sequence"`
	DeliveryStatus *string `json:"delivery_status"`
}

// appendJSON writes the embedded message's fields first and then its own,
// in one object, as encoding/json flattens an embedded struct.
func (m *threadMessageJSON) appendJSON(b []byte) []byte {
	b = m.messageJSON.appendJSON(b)
	b = strconv.AppendInt(append(b[:len(b)-1], `,"sequence":`...), m.Sequence, 10)
	b = appendStringOrNull(append(b, `,"delivery_status":`...), m.DeliveryStatus)
	return append(b, '}')
}
