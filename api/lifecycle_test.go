package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inboxd/inboxd/app"
)

// While the server drains, /readyz says so: a load balancer stops sending
// it requests before it goes away.
func TestReadyzWhileDraining(t *testing.T) {
	draining := make(chan struct{})
	e := newEnv(t, Config{Draining: draining})
	if r := e.get("", "/readyz"); r.status != http.StatusOK {
		t.Fatalf("readyz before the drain: %d %s", r.status, r.body)
	}
	close(draining)
	r := e.get("", "/readyz")
	if r.status != http.StatusServiceUnavailable || r.json(t)["error"].(map[string]any)["code"] != "temporarily_unavailable" {
		t.Fatalf("readyz while draining: %d %s", r.status, r.body)
	}
	if r := e.get("", "/healthz"); r.status != http.StatusOK {
		t.Errorf("healthz while draining: %d %s", r.status, r.body)
	}
}

// A worker silent for longer than app.HeartbeatStale makes /readyz 503,
// naming it; once it runs again the server is ready again.
func TestReadyzWhenAWorkerStalls(t *testing.T) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	e := newEnvWith(t, Config{}, app.Config{Heartbeats: []app.Heartbeat{
		{Name: "outbound", Last: time.Now},
		{Name: "webhook", Last: func() time.Time { return time.Unix(0, last.Load()) }},
	}})
	if r := e.get("", "/readyz"); r.status != http.StatusOK {
		t.Fatalf("readyz with fresh heartbeats: %d %s", r.status, r.body)
	}
	last.Store(time.Now().Add(-app.HeartbeatStale - time.Minute).UnixNano())
	r := e.get("", "/readyz")
	if msg, _ := r.json(t)["error"].(map[string]any)["message"].(string); r.status != http.StatusServiceUnavailable || !strings.Contains(msg, "webhook worker has not run for 6m") {
		t.Fatalf("readyz with a stalled worker: %d %s", r.status, r.body)
	}
	last.Store(time.Now().UnixNano())
	if r := e.get("", "/readyz"); r.status != http.StatusOK {
		t.Fatalf("readyz after the worker ran again: %d %s", r.status, r.body)
	}
}

// The drain ends both long-polls at once, with the answer an expired wait
// gives; a long-poll that starts during the drain is refused at once.
func TestDrainEndsLongPolls(t *testing.T) {
	draining := make(chan struct{})
	waiting := make(chan struct{}, 2)
	e := newEnvWith(t, Config{Draining: draining}, app.Config{PollWaiting: func() {
		select {
		case waiting <- struct{}{}:
		default: // woken again by a commit (the search indexer's): signalled already
		}
	}})
	ib := e.boot.Inbox.ID
	d := e.deliver(ib, rawMail("root@x", "s", "hello"))
	start := e.get(e.admin, e.path("/events")).json(t)["next_cursor"].(string)
	polls := []string{
		e.path("/inboxes/%s/threads/%s/messages?after_sequence=1", ib, d.ThreadID),
		e.path("/events?after=%s", start),
	}
	empty := make([]string, len(polls))
	got := make([]chan response, len(polls))
	for i, p := range polls {
		r := e.get(e.admin, p+"&wait=0")
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, r.status, r.body)
		}
		empty[i] = string(r.body)
		got[i] = make(chan response, 1)
		go func() { got[i] <- e.get(e.admin, p+"&wait=60") }()
	}
	<-waiting
	<-waiting
	close(draining)
	for i, p := range polls {
		select {
		case r := <-got[i]:
			if r.status != http.StatusOK || string(r.body) != empty[i] {
				t.Errorf("long-poll %s at the drain: %d %s, want 200 %s", p, r.status, r.body, empty[i])
			}
		case <-time.After(20 * time.Second): // far below the 60 s wait
			t.Fatalf("long-poll %s not ended by the drain", p)
		}
		// A new one is refused (and says when to come back), so a client
		// that polls in a loop does not spin on empty answers meanwhile.
		if r := e.get(e.admin, p+"&wait=60"); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "temporarily_unavailable") {
			t.Errorf("long-poll %s during the drain: %d %s", p, r.status, r.body)
		}
	}
}

// A body trickled a byte at a time is cut at the body timeout, long before
// it is complete.
func TestBodyTimeoutCutsTrickledBody(t *testing.T) {
	e := newEnv(t, Config{BodyTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const length = 100
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		e.path("/webhooks"), e.admin, length)
	answered := make(chan *http.Response, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			resp = nil // cut without an answer
		}
		answered <- resp
	}()
	tick := time.NewTicker(50 * time.Millisecond) // the trickle: 5 s for the whole body
	defer tick.Stop()
	sent := 0
	var resp *http.Response
trickle:
	for sent < length {
		select {
		case resp = <-answered:
			break trickle
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				resp = <-answered
				break trickle
			}
			sent++
		}
	}
	if sent == length {
		resp = <-answered
		t.Fatalf("the whole trickled body was read (answer: %v)", resp)
	}
	if resp == nil {
		t.Logf("cut without an answer after %d of %d bytes", sent, length)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "did not arrive in time") {
		t.Errorf("answer to a trickled body: %d %s", resp.StatusCode, b)
	}
	t.Logf("answered %d after %d of %d bytes", resp.StatusCode, sent, length)
}

// The body deadline is for bodies: a long-poll (no body) that outlasts the
// body timeout is not cut short by net/http's background read of the
// connection.
func TestBodyDeadlineSparesLongPolls(t *testing.T) {
	e := newEnv(t, Config{BodyTimeout: 100 * time.Millisecond})
	after := e.get(e.admin, e.path("/events")).json(t)["next_cursor"]
	start := time.Now()
	r := e.get(e.admin, e.path("/events?wait=1&after=%s", after))
	if elapsed := time.Since(start); r.status != http.StatusOK || elapsed < time.Second {
		t.Errorf("long-poll with wait=1: %d after %v, want 200 after its whole wait", r.status, elapsed)
	}
}
