package store

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"
)

// A transaction whose context is cancelled keeps the writer until its
// function returns: a transaction begun meanwhile must keep its pending
// search rows (an acknowledged message that search never finds otherwise).
func TestCancelledTransactionKeepsTheWriter(t *testing.T) {
	db, b := openTest(t)
	// The writer's start-up work is done once a first ingest has
	// committed and the retention round Run plans at its start has ended
	// (its search-merge slice waits for a quiet second, and then for the
	// writer connection A holds): from then on Run waits for the writer
	// only for B, until the next round in resolveInterval.
	if _, err := db.Ingest(context.Background(), incoming(b.Inbox.ID, "Message-ID: <first@x>\r\nSubject: s\r\n\r\nfirst\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PruneNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	aInside, proceedA, doneA, bInside := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	// A failing check must still let A go, or closing the database
	// waits for the writer A holds (a 10-minute hang, not a failure).
	var releaseA sync.Once
	t.Cleanup(func() { releaseA.Do(func() { close(proceedA) }) })
	// B's batch calls this after its message's search row is pending.
	db.failNext = func() error { close(bInside); <-doneA; return nil }
	go func() {
		defer close(doneA)
		db.tx(ctxA, func(*sql.Tx) error {
			cancelA()
			close(aInside)
			<-proceedA
			return ctxA.Err()
		})
	}()
	<-aInside
	waits := db.w.Stats().WaitCount
	ingested := make(chan error, 1)
	go func() {
		_, err := db.Ingest(context.Background(), incoming(b.Inbox.ID, "Message-ID: <needle@x>\r\nSubject: s\r\n\r\nneedle\r\n"))
		ingested <- err
	}()
	// Let A finish once B is either inside its own transaction (the bug)
	// or waiting for the writer (the fix); neither needs a sleep.
	guard := time.After(10 * time.Second)
	for waiting := false; !waiting; {
		select {
		case <-bInside:
			waiting = true
		case <-guard:
			t.Fatal("the ingest neither began nor waited for the writer")
		default:
			waiting = db.w.Stats().WaitCount > waits
			runtime.Gosched()
		}
	}
	releaseA.Do(func() { close(proceedA) })
	if err := <-ingested; err != nil {
		t.Fatal(err)
	}
	if err := db.awaitSearch(context.Background()); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.r.QueryRow(`SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'needle'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the acknowledged message has %d search rows (%v)", n, err)
	}
}

// A panic inside a transaction rolls it back: the writer is free for the
// next one instead of blocking every later write.
func TestPanicInTransactionFreesTheWriter(t *testing.T) {
	db, b := openTest(t)
	func() {
		defer func() { recover() }()
		db.tx(context.Background(), func(*sql.Tx) error { panic("boom") })
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.Ingest(ctx, incoming(b.Inbox.ID, "Message-ID: <after@x>\r\nSubject: s\r\n\r\nx\r\n")); err != nil {
		t.Fatalf("ingest after a panicking transaction: %v", err)
	}
}

// closeBlob is a message.Blob over bytes that records Close.
type closeBlob struct {
	data   []byte
	closed chan struct{}
}

func (b *closeBlob) Write(p []byte) (int, error) { b.data = append(b.data, p...); return len(p), nil }
func (b *closeBlob) Bytes() ([]byte, bool)       { return nil, false }
func (b *closeBlob) Len() int64                  { return int64(len(b.data)) }
func (b *closeBlob) Reader() io.Reader           { return bytes.NewReader(b.data) }
func (b *closeBlob) Close() error                { close(b.closed); return nil }

// Ingest owns a spooled message: it closes the spool once the message is
// stored, and when it gives up before queueing it (a caller that timed out
// leaves the file to nobody otherwise).
func TestIngestReleasesSpooledMessages(t *testing.T) {
	db, b := openTest(t)
	raw := []byte("Message-ID: <big@x>\r\nSubject: s\r\n\r\nspooled\r\n")
	for _, tc := range []struct {
		name   string
		ctx    func() context.Context
		stored bool
	}{
		{"stored", context.Background, true},
		{"given up", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, false},
	} {
		blob := &closeBlob{data: raw, closed: make(chan struct{})}
		in := incoming(b.Inbox.ID, string(raw))
		in.Raw, in.Large = nil, blob
		_, err := db.Ingest(tc.ctx(), in)
		if (err == nil) != tc.stored {
			t.Fatalf("%s: err = %v", tc.name, err)
		}
		// Given up, it may still have been queued: then the writer closes
		// it after its batch. Either way it is closed, soon.
		select {
		case <-blob.closed:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: the spooled message was not closed", tc.name)
		}
	}
}
