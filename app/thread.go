package app

import (
	"context"
	"strings"

	"github.com/inboxd/inboxd/store"
)

// ThreadsParams are the parameters of ListThreads, as given.
type ThreadsParams struct {
	PageParams
	Q string // search (SPEC §5.5); "" for every thread
}

// ListThreads is a page of an inbox's threads, newest first by their last
// message, optionally only those matching a search.
func (a *App) ListThreads(ctx context.Context, c Caller, inboxID string, p ThreadsParams) (Page[store.Thread], error) {
	if err := c.Need("threads:read"); err != nil {
		return Page[store.Thread]{}, err
	}
	ib, err := a.GrantedInbox(ctx, c, inboxID)
	if err != nil {
		return Page[store.Thread]{}, err
	}
	limit, err := p.Size(25)
	if err != nil {
		return Page[store.Thread]{}, err
	}
	q, err := searchQuery(p.Q)
	if err != nil {
		return Page[store.Thread]{}, err
	}
	scope := CursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "threads", Query: q.String()}
	after, err := Position[store.TimeKey](a, scope, p.Cursor)
	if err != nil {
		return Page[store.Thread]{}, err
	}
	threads, err := a.db.ListThreads(ctx, ib.ID, q, after, limit+1)
	if err != nil {
		return Page[store.Thread]{}, err
	}
	return NewPage(a, threads, limit, scope,
		func(t store.Thread) any { return store.TimeKey{At: t.LastMessageAt.UnixMilli(), ID: t.ID} })
}

// Thread is one thread of an inbox of the caller's grant.
func (a *App) Thread(ctx context.Context, c Caller, inboxID, threadID string) (store.Thread, error) {
	if err := c.Need("threads:read"); err != nil {
		return store.Thread{}, err
	}
	_, t, err := a.thread(ctx, c, inboxID, threadID)
	return t, err
}

// thread loads a thread, and its inbox, within the caller's grant.
func (a *App) thread(ctx context.Context, c Caller, inboxID, threadID string) (store.Inbox, store.Thread, error) {
	if !c.CanSee(inboxID) {
		return store.Inbox{}, store.Thread{}, ErrNotFound
	}
	return a.db.GetInboxThread(ctx, c.ProjectID, inboxID, threadID)
}

// ThreadMessagesParams are the parameters of ThreadMessages, as given.
type ThreadMessagesParams struct {
	PageParams
	AfterSequence string // only messages with a higher sequence; "" for all
	Wait          string // seconds to long-poll for one (0–60); "" for none
}

// ThreadMessagesRead is a read of a thread's messages that has passed its
// scope and grant checks; ThreadMessages is the only way to one. Page
// answers it. A surface may keep the pages it answered (api does, rendered)
// and answer a read from them while the database is unchanged, as long as
// it finds them by CacheKey: a key comes only from a read that passed the
// checks, so no cached page reaches a caller who could not have read it.
type ThreadMessagesRead struct {
	a                 *App
	c                 Caller
	inboxID, threadID string
	p                 ThreadMessagesParams
}

// ThreadMessages checks that the caller may read the messages of a thread:
// the scope, and the inbox within its grant. That is all it checks: a
// missing thread and bad parameters are Page's answers, after it.
func (a *App) ThreadMessages(c Caller, inboxID, threadID string, p ThreadMessagesParams) (*ThreadMessagesRead, error) {
	if err := c.Need("messages:read"); err != nil {
		return nil, err
	}
	if !c.CanSee(inboxID) {
		return nil, ErrNotFound
	}
	return &ThreadMessagesRead{a: a, c: c, inboxID: inboxID, threadID: threadID, p: p}, nil
}

// Cacheable reports whether the page is a function of CacheKey and the
// database's contents alone: not when it waits (a long-poll answers when
// something arrives) nor when it reads on from a cursor (a cursor expires
// at its own time, checked at every read).
func (r *ThreadMessagesRead) Cacheable() bool {
	wait, err := waitOf(r.p.Wait)
	return err == nil && wait == 0 && r.p.Cursor == ""
}

// CacheKey identifies the page of a Cacheable read: reads with the same
// key against the same database answer the same page. It holds all the
// page depends on (the project, inbox, thread, limit and after_sequence),
// not who asked: the checks are made for each read.
func (r *ThreadMessagesRead) CacheKey() string {
	return strings.Join([]string{r.c.ProjectID, r.inboxID, r.threadID, r.p.Limit, r.p.AfterSequence}, "\x00")
}

// Page is a page of the thread's messages, oldest first by sequence: those
// after AfterSequence, long-polling up to Wait for the first of them when
// there are none yet.
func (r *ThreadMessagesRead) Page(ctx context.Context) (Messages, error) {
	a := r.a
	ib, t, err := a.thread(ctx, r.c, r.inboxID, r.threadID)
	if err != nil {
		return Messages{}, err
	}
	limit, err := r.p.Size(50)
	if err != nil {
		return Messages{}, err
	}
	wait, err := waitOf(r.p.Wait)
	if err != nil {
		return Messages{}, err
	}
	afterSeq, err := nonNegative("after_sequence", r.p.AfterSequence)
	if err != nil {
		return Messages{}, err
	}
	scope := CursorScope{Project: ib.ProjectID, Inbox: ib.ID, List: "thread_messages", Thread: t.ID}
	after, err := Position[store.SeqKey](a, scope, r.p.Cursor)
	if err != nil {
		return Messages{}, err
	}
	var msgs []store.Message
	err = a.poll(ctx, r.c, "thread_messages", wait, func() (bool, error) {
		msgs, err = a.db.ThreadPage(ctx, t.ID, after, afterSeq, limit+1)
		return len(msgs) > 0, err
	})
	if err != nil {
		return Messages{}, err
	}
	page := msgs[:min(limit, len(msgs))]
	return a.messages(ctx, ib, msgs, limit, scope, t.MayHaveAttachments(page),
		func(m store.Message) any { return store.SeqKey{Seq: m.Sequence, ID: m.ID} })
}
