package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdWriter keeps the writer (Run) busy with a request of its own until
// the returned release is called, so that sends queue up behind it; the
// writer takes them into the held request's batch (commitBatch takes
// what queued while a batch's statements ran) and commits them together.
func holdWriter(t *testing.T, db *DB) (release func()) {
	t.Helper()
	release0 := holdWriterBatch(t, db)
	return func() {
		if err := release0(); err != nil {
			t.Fatal(err)
		}
	}
}

// holdWriterBatch is holdWriter whose release returns the held request's
// outcome: the commit of the batch it and the sends queued behind it
// made.
func holdWriterBatch(t *testing.T, db *DB) (release func() error) {
	t.Helper()
	held, free := make(chan struct{}), make(chan struct{})
	req := &writeReq{done: make(chan error, 1), store: func(context.Context, *sql.Tx) error {
		close(held)
		<-free
		return nil
	}}
	if err := db.enqueue(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	<-held
	// A check that fails while the writer is held must still free it, or
	// closing the database waits for it forever.
	var once sync.Once
	unhold := func() { once.Do(func() { close(free) }) }
	t.Cleanup(unhold)
	return func() error {
		unhold()
		return <-req.done
	}
}

// waitQueued returns once n requests wait in the writer's queue.
func waitQueued(t *testing.T, db *DB, n int) {
	t.Helper()
	guard := time.After(10 * time.Second)
	for len(db.writeQ) != n {
		select {
		case <-guard:
			t.Fatalf("%d requests queued, want %d", len(db.writeQ), n)
		default:
			runtime.Gosched()
		}
	}
}

func localSend(inboxID string, i int) SendRequest {
	raw := fmt.Sprintf("From: inbox@localhost\r\nTo: x@capture.example\r\nMessage-ID: <s%d@localhost>\r\nSubject: %d\r\n\r\nbody word%d\r\n", i, i, i)
	return SendRequest{
		Out: Outgoing{InboxID: inboxID, Raw: []byte(raw), Confirmed: true,
			Recipients: []Recipient{{Email: "x@capture.example", Type: "to", Route: "capture"}}},
	}
}

// Sends that share a commit fail alone: a send whose delivery row is
// refused (the type's CHECK) after its message row was written, or whose
// idempotency key conflicts, leaves no
// row, no event and no search entry; its batch-mates are stored.
func TestSendGroupCommitIsolatesFailures(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	taken := SendRequest{ProjectID: b.ProjectID, Idempotency: &Idempotency{Key: "taken", Hash: []byte("first")}}
	taken.Out = localSend(b.Inbox.ID, -1).Out
	if _, err := db.Send(ctx, taken); err != nil {
		t.Fatal(err)
	}

	const n = 30
	release := holdWriter(t, db)
	var wg sync.WaitGroup
	res := make([]SendResult, n)
	errs := make([]error, n)
	for i := range n {
		req := localSend(b.Inbox.ID, i)
		req.ProjectID = b.ProjectID
		switch i % 3 {
		case 1:
			req.Out.Recipients[0].Type = "nope" // fails after the message row
		case 2:
			req.Idempotency = &Idempotency{Key: "taken", Hash: []byte("other")}
		}
		wg.Go(func() { res[i], errs[i] = db.Send(ctx, req) })
	}
	waitQueued(t, db, n)
	release()
	wg.Wait()

	stored := map[string]bool{}
	for i := range n {
		switch {
		case i%3 == 0 && (errs[i] != nil || !strings.HasPrefix(res[i].MessageID, "msg_")):
			t.Errorf("send %d: %+v %v", i, res[i], errs[i])
		case i%3 == 1 && (errs[i] == nil || res[i].MessageID != ""):
			t.Errorf("send %d with a refused delivery: %+v %v", i, res[i], errs[i])
		case i%3 == 2 && !errors.Is(errs[i], ErrIdempotencyConflict):
			t.Errorf("send %d with a conflicting key: %v", i, errs[i])
		}
		if errs[i] == nil {
			stored[res[i].MessageID] = true
		}
	}
	msgs, err := db.InboxMessages(ctx, b.Inbox.ID)
	if err != nil || len(msgs) != n/3+1 {
		t.Fatalf("stored %d messages, want %d (%v)", len(msgs), n/3+1, err)
	}
	events, err := db.Events(ctx, EventFilter{ProjectID: b.ProjectID, Types: []string{EventMessageQueued}}, 100)
	if err != nil || len(events) != n/3+1 {
		t.Fatalf("%d message.queued events, want %d (%v)", len(events), n/3+1, err)
	}
	for _, m := range msgs {
		if m.Subject != "-1" && !stored[m.ID] {
			t.Errorf("message %s stored but not acknowledged", m.ID)
		}
	}
	for i := range n {
		q, err := ParseQuery(fmt.Sprintf("word%d", i))
		if err != nil {
			t.Fatal(err)
		}
		found, err := db.InboxPage(ctx, b.Inbox.ID, q, "", nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := 0; errs[i] == nil {
			if len(found) != 1 || found[0].ID != res[i].MessageID {
				t.Errorf("search for send %d found %+v", i, found)
			}
		} else if len(found) != want {
			t.Errorf("search for failed send %d found %+v", i, found)
		}
	}
}

// A batch whose commit fails answers every send in it with the error and
// stores none of them.
func TestSendGroupCommitFailureFailsTheBatch(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	const n = 5
	release := holdWriterBatch(t, db)
	db.failNext = func() error { return errors.New("disk I/O error") }
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = db.Send(ctx, localSend(b.Inbox.ID, i)) })
	}
	waitQueued(t, db, n)
	if err := release(); err == nil {
		t.Error("the held request was answered without the commit's error")
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			t.Errorf("send %d acknowledged despite the failed commit", i)
		}
	}
	if msgs, err := db.InboxMessages(ctx, b.Inbox.ID); err != nil || len(msgs) != 0 {
		t.Fatalf("%d messages stored after a failed commit (%v)", len(msgs), err)
	}
}

// A send whose caller gave up before the writer reached it is not stored.
func TestSendCancelledWhileQueued(t *testing.T) {
	db, b := openTest(t)
	release := holdWriter(t, db)
	// Both sends queue behind the held writer; the second is cancelled
	// there.
	var wg sync.WaitGroup
	var leadErr error
	wg.Go(func() { _, leadErr = db.Send(context.Background(), localSend(b.Inbox.ID, 1)) })
	waitQueued(t, db, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	wg.Go(func() { _, err = db.Send(ctx, localSend(b.Inbox.ID, 2)) })
	waitQueued(t, db, 2)
	cancel()
	release()
	wg.Wait()
	if leadErr != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v; cancelled send: %v", leadErr, err)
	}
	msgs, _ := db.InboxMessages(context.Background(), b.Inbox.ID)
	if len(msgs) != 1 || msgs[0].Subject != "1" {
		t.Fatalf("stored %+v, want only the first send", msgs)
	}
}

// A local delivery round delivers what it found due and prepared before
// taking the writer; a delivery queued in between waits for the next
// round. Both copies are stored whole.
func TestLocalDeliveryRounds(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	bob, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "bob@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	send := func(subject string) {
		raw := "From: inbox@localhost\r\nTo: bob@localhost\r\nMessage-ID: <" + subject + "@localhost>\r\nSubject: " + subject +
			"\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nCaf=C3=A9 " + subject + "\r\n"
		_, err := db.Send(ctx, SendRequest{
			Out: Outgoing{InboxID: b.Inbox.ID, Raw: []byte(raw), Confirmed: true,
				Recipients: []Recipient{{Email: "bob@localhost", Type: "to", Route: "local"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	send("first")
	due, err := db.prepareDueLocal(ctx, 100)
	if err != nil || len(due.ids) != 1 {
		t.Fatalf("found %d due deliveries, want 1 (%v)", len(due.ids), err)
	}
	send("second")
	if n, err := db.deliverLocalDue(ctx, due); err != nil || n != 1 {
		t.Fatalf("first round delivered %d, want 1 (%v)", n, err)
	}
	if n, err := db.DeliverLocalDue(ctx, 100); err != nil || n != 1 {
		t.Fatalf("second round delivered %d, want 1 (%v)", n, err)
	}
	if n, err := db.DeliverLocalDue(ctx, 100); err != nil || n != 0 {
		t.Fatalf("third round delivered %d, want 0 (%v)", n, err)
	}
	msgs, err := db.InboxMessages(ctx, bob.ID)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("bob holds %d messages, want 2 (%v)", len(msgs), err)
	}
	for _, m := range msgs {
		want := "Café " + m.Subject
		if m.Direction != "inbound" || m.Preview != want || m.From == nil || m.From.Email != "inbox@localhost" ||
			m.RFCMessageID != "<"+m.Subject+"@localhost>" {
			t.Errorf("delivered copy %+v", m)
		}
		raw, err := db.Raw(ctx, m.ID)
		if err != nil || !strings.HasPrefix(string(raw), "Received: from inbox@localhost (inboxd local delivery)") ||
			!strings.HasSuffix(string(raw), "Caf=C3=A9 "+m.Subject+"\r\n") {
			t.Errorf("raw of %s: %q %v", m.Subject, raw, err)
		}
	}
	for _, typ := range []string{EventMessageReceived, "message.delivered"} {
		events, err := db.Events(ctx, EventFilter{ProjectID: b.ProjectID, Types: []string{typ}}, 10)
		if err != nil || len(events) != 2 {
			t.Errorf("%d %s events, want 2 (%v)", len(events), typ, err)
		}
	}
}

// A local delivery to an inbox deleted after the send was queued bounces.
func TestLocalDeliveryToDeletedInboxBounces(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	bob, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "bob@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for i := range 2 {
		req := localSend(b.Inbox.ID, i)
		req.Out.Recipients = []Recipient{{Email: "bob@localhost", Type: "to", Route: "local"}}
		res, err := db.Send(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, res.MessageID)
	}
	if err := db.DeleteInbox(ctx, b.ProjectID, bob.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := db.DeliverLocalDue(ctx, 100); err != nil || n != 2 {
		t.Fatalf("delivered %d, want 2 (%v)", n, err)
	}
	ds, err := db.DeliveriesOf(ctx, sent)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range sent {
		if d := ds[id]; len(d) != 1 || d[0].Status != StatusBounced || d[0].Code == nil || *d[0].Code != 550 {
			t.Errorf("deliveries of %s: %+v", id, d)
		}
	}
}

// A delivery's id is never another's: a relay's answer for a send deleted
// with its inbox mid-attempt, and a local round prepared before such a
// delete, land on nothing, not on the next send that SQLite would have
// given the freed id (max(id)+1). That send is relayed, or delivered,
// as if nothing happened; before, it was marked sent without being
// relayed, and the local round dereferenced a message it had not prepared.
// Recording the deleted delivery's answer is no error.
func TestDeliveryIDsAreNotReused(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	other, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "other@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	doomed, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "doomed@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "bob@localhost"}); err != nil {
		t.Fatal(err)
	}

	// Relay: the claim outlives its delivery.
	sendUnconfirmed(t, db, doomed.ID, "old@localhost")
	claimed, err := db.ClaimDeliveries(ctx, Claim{Messages: 10, Lease: time.Hour})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %v (%v), want one", claimed, err)
	}
	if err := db.DeleteInbox(ctx, b.ProjectID, doomed.ID); err != nil {
		t.Fatal(err)
	}
	res := sendUnconfirmed(t, db, other.ID, "new@localhost")
	// The row is gone: its answer has nothing to change, and is no error
	// (the worker would back off and log it).
	if err := db.RecordDeliveries(ctx, []DeliveryResult{{ID: claimed[0].ID, Status: StatusSent, Code: 250, Message: "ok"}}); err != nil {
		t.Errorf("recording the answer for a deleted delivery: %v", err)
	}
	ds, err := db.DeliveriesOf(ctx, []string{res.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[res.MessageID]; len(d) != 1 || d[0].Status != StatusQueued {
		t.Errorf("the next send's deliveries: %+v, want one queued", d)
	}
	if again, err := db.ClaimDeliveries(ctx, Claim{Messages: 10, Lease: time.Hour}); err != nil || len(again) != 1 || again[0].MessageID != res.MessageID {
		t.Errorf("claimable after: %+v (%v), want the next send's", again, err)
	}

	// Local: a round prepared before the delete.
	doomed, err = db.CreateInbox(ctx, b.ProjectID, NewInbox{Address: "doomed2@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	to := func(inboxID string, i int) SendRequest {
		req := localSend(inboxID, i)
		req.Out.Recipients = []Recipient{{Email: "bob@localhost", Type: "to", Route: "local"}}
		return req
	}
	if _, err := db.Send(ctx, to(doomed.ID, 1)); err != nil {
		t.Fatal(err)
	}
	due, err := db.prepareDueLocal(ctx, 100)
	if err != nil || len(due.ids) != 1 {
		t.Fatalf("prepared %+v (%v), want one", due, err)
	}
	if err := db.DeleteInbox(ctx, b.ProjectID, doomed.ID); err != nil {
		t.Fatal(err)
	}
	next, err := db.Send(ctx, to(other.ID, 2))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := db.deliverLocalDue(ctx, due); err != nil || n != 0 {
		t.Errorf("the prepared round delivered %d (%v), want 0: its delivery was deleted", n, err)
	}
	if n, err := db.DeliverLocalDue(ctx, 100); err != nil || n != 1 {
		t.Fatalf("the next round delivered %d (%v), want 1", n, err)
	}
	ds, err = db.DeliveriesOf(ctx, []string{next.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[next.MessageID]; len(d) != 1 || d[0].Status != StatusDelivered {
		t.Errorf("the next local send's deliveries: %+v, want one delivered", d)
	}
}

// An idempotency key stores what the send did and replays it as data: a
// held send's draft and approval, a queued one's message — and a row
// written before migration 0010, which held the HTTP answer's JSON, reads
// as the same result.
func TestIdempotencyReplaysResult(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	queued := localSend(b.Inbox.ID, 1)
	queued.ProjectID, queued.Idempotency = b.ProjectID, &Idempotency{Key: "q", Hash: []byte("1")}
	held := localSend(b.Inbox.ID, 2)
	held.ProjectID, held.Idempotency, held.Hold = b.ProjectID, &Idempotency{Key: "h", Hash: []byte("2")}, true
	for _, req := range []SendRequest{queued, held} {
		first, err := db.Send(ctx, req)
		if err != nil || first.Replayed {
			t.Fatal(first, err)
		}
		again, err := db.Send(ctx, req)
		if err != nil || !again.Replayed {
			t.Fatal(again, err)
		}
		again.Replayed = false
		if again != first {
			t.Errorf("replayed %+v, first %+v", again, first)
		}
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO idempotency_keys (project_id, key, request_hash, result, created_at) VALUES (?, 'old', ?, ?, ?)`,
		b.ProjectID, []byte("3"), []byte(`{"inbox_id":"ibx_1","message_id":"msg_1","result":"queued","thread_id":"thd_1"}`+"\n"), ms(db.now())); err != nil {
		t.Fatal(err)
	}
	old := localSend(b.Inbox.ID, 3)
	old.ProjectID, old.Idempotency = b.ProjectID, &Idempotency{Key: "old", Hash: []byte("3")}
	got, err := db.Send(ctx, old)
	if want := (SendResult{MessageID: "msg_1", ThreadID: "thd_1", InboxID: "ibx_1", Replayed: true}); err != nil || got != want {
		t.Fatalf("old row: %+v %v, want %+v", got, err, want)
	}
}

// Requests that queue while a batch's statements run join that batch: one
// commit for all of them, not one for the batch and another for them;
// unless the batch has already run for batchExtend.
func TestRequestsQueuedMidBatchJoinIt(t *testing.T) {
	const n = 5
	for _, c := range []struct {
		extend time.Duration
		want   []int
	}{
		{time.Hour, []int{n + 1}}, // the held request and the sends
		{0, []int{1, n}},
	} {
		var mu sync.Mutex
		var sizes []int
		db, b, _ := openRunning(t, Options{Path: filepath.Join(t.TempDir(), "inboxd.db"), OnBatch: func(n int, _ time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			sizes = append(sizes, n)
		}})
		db.batchExtend = c.extend
		ctx := context.Background()
		release := holdWriter(t, db)
		mu.Lock()
		sizes = nil // the writer's start-up batches
		mu.Unlock()
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if _, err := db.Send(ctx, localSend(b.Inbox.ID, i)); err != nil {
					t.Error(err)
				}
			})
		}
		waitQueued(t, db, n)
		release()
		wg.Wait()
		mu.Lock()
		if !slices.Equal(sizes, c.want) {
			t.Errorf("batchExtend %v: batches of %v, want %v", c.extend, sizes, c.want)
		}
		mu.Unlock()
	}
}

// queueRelay queues a message from the inbox to rcpts by relay and
// returns its id.
func queueRelay(t testing.TB, db *DB, inboxID string, rcpts ...string) string {
	t.Helper()
	req := SendRequest{Out: Outgoing{InboxID: inboxID, Raw: []byte("From: inbox@localhost\r\nSubject: s\r\n\r\nb\r\n")}}
	for _, r := range rcpts {
		req.Out.Recipients = append(req.Out.Recipients, Recipient{Email: r, Type: "to", Route: "relay"})
	}
	res, err := db.Send(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res.MessageID
}

// A claim takes whole messages, those due first, with every due recipient
// of each in the order queued, and leaves alone the messages whose
// attempts are in flight, even once their lease has run out: the worker
// delivers several messages at once and must never hand one out twice.
func TestClaimDeliveriesByMessage(t *testing.T) {
	db, b := openTest(t)
	ctx := context.Background()
	send := func(rcpts ...string) string { return queueRelay(t, db, b.Inbox.ID, rcpts...) }
	m1 := send("a@x.example", "b@y.example", "c@x.example")
	m2 := send("d@x.example")
	m3 := send("e@x.example")
	got := func(cs []DeliveryClaim) (s []string) {
		for _, c := range cs {
			s = append(s, c.MessageID+" "+c.Email)
		}
		return s
	}

	// A lease already over: what is claimed is due again at once.
	cs, err := db.ClaimDeliveries(ctx, Claim{Messages: 2, Lease: -time.Second})
	want := []string{m1 + " a@x.example", m1 + " b@y.example", m1 + " c@x.example", m2 + " d@x.example"}
	if err != nil || !slices.Equal(got(cs), want) {
		t.Fatalf("two messages: %v (%v), want %v", got(cs), err, want)
	}
	if cs[0].From != "inbox@localhost" || cs[0].Attempts != 1 {
		t.Errorf("claim %+v", cs[0])
	}
	cs, err = db.ClaimDeliveries(ctx, Claim{Messages: 10, Busy: []string{m1, m2}, Lease: time.Hour})
	if want := []string{m3 + " e@x.example"}; err != nil || !slices.Equal(got(cs), want) {
		t.Fatalf("with two in flight: %v (%v), want %v", got(cs), err, want)
	}
	cs, err = db.ClaimDeliveries(ctx, Claim{Messages: 10, Busy: []string{m2}, Lease: time.Hour})
	if err != nil || len(cs) != 3 || cs[0].MessageID != m1 || cs[0].Attempts != 2 {
		t.Fatalf("m1 again, its lease over: %v (%v)", got(cs), err)
	}
	if cs, err := db.ClaimDeliveries(ctx, Claim{Lease: time.Hour}); err != nil || len(cs) != 0 {
		t.Errorf("no room: %v (%v)", got(cs), err)
	}
}

// With a limit per domain, a claim skips the messages with a recipient in
// a domain that has all it may have in flight, counting what it takes
// itself, takes the messages behind them, and takes first the messages
// whose domains have the fewest in flight; a domain is what follows the
// address's last @, without case or a final dot.
func TestClaimDeliveriesPerDomain(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		inFlight map[string]int
		limit    int
		messages int      // 10 when 0
		want     []string // messages 1 to 4 in the order claimed, and the domains claimed
	}{
		{"none in flight", nil, 1, 0, []string{"1 x.example", "1 y.example", "4 z.example"}},
		{"x full", map[string]int{"x.example": 1}, 1, 0, []string{"3 y.example", "4 z.example"}},
		{"room for one more", map[string]int{"x.example": 1, "z.example": 2}, 2, 0, []string{"3 y.example", "1 x.example", "1 y.example"}},
		{"the least busy first", map[string]int{"x.example": 3, "z.example": 3}, 4, 1, []string{"3 y.example"}},
		{"no limit", map[string]int{"x.example": 5}, 0, 0, []string{"1 x.example", "1 y.example", "2 x.example", "3 y.example", "4 z.example"}},
	} {
		db, b := openTest(t)
		number := map[string]int{}
		for i, rcpts := range [][]string{{"a@x.example", "b@y.example"}, {"c@X.Example"}, {"d@y.example."}, {`"e@y.example"@z.example`}} {
			number[queueRelay(t, db, b.Inbox.ID, rcpts...)] = i + 1
		}
		cs, err := db.ClaimDeliveries(ctx, Claim{Messages: cmp.Or(tc.messages, 10), PerDomain: tc.limit, InFlight: tc.inFlight, Lease: time.Hour})
		var got []string
		for _, c := range cs {
			got = append(got, fmt.Sprintf("%d %s", number[c.MessageID], c.Domain))
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v (%v), want %v", tc.name, got, err, tc.want)
		}
	}

	// A full domain's queue of 150 recipients does not hide the mail
	// behind it.
	db, b := openTest(t)
	var long []string
	for i := range 150 {
		long = append(long, fmt.Sprintf("r%d@x.example", i))
	}
	queueRelay(t, db, b.Inbox.ID, long...)
	other := queueRelay(t, db, b.Inbox.ID, "s@y.example")
	cs, err := db.ClaimDeliveries(ctx, Claim{Messages: 1, PerDomain: 1, InFlight: map[string]int{"x.example": 1}, Lease: time.Hour})
	if err != nil || len(cs) != 1 || cs[0].MessageID != other {
		t.Errorf("behind a full domain's queue: %d claimed (%v), want the message to y.example", len(cs), err)
	}

	// A message whose recipients run past what a claim reads first is
	// judged by all its due recipients: its last one, to a full domain,
	// keeps it back.
	db, b = openTest(t)
	queueRelay(t, db, b.Inbox.ID, "p@z.example")
	straddles := append(slices.Repeat([]string{"q@x.example"}, 99), "last@y.example")
	for i := range 99 {
		straddles[i] = fmt.Sprintf("q%d@x.example", i)
	}
	queueRelay(t, db, b.Inbox.ID, straddles...)
	cs, err = db.ClaimDeliveries(ctx, Claim{Messages: 1, PerDomain: 1, InFlight: map[string]int{"z.example": 1, "y.example": 1}, Lease: time.Hour})
	if err != nil || len(cs) != 0 {
		t.Errorf("a message with a recipient past the first read, in a full domain: %d claimed (%v), want none", len(cs), err)
	}
}
