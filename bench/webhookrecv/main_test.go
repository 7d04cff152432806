package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestReceiverMeasuresFromCreatedAt(t *testing.T) {
	r := newReceiver(2)
	created := time.Now().Add(-20 * time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z")
	for _, body := range []string{
		`{"id":"evt_1","type":"message.received","created_at":"` + created + `","data":{}}`,
		`not json`,
	} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
		if w.Code != http.StatusNoContent {
			t.Fatalf("status %d, want 204", w.Code)
		}
	}
	select {
	case <-r.full:
	default:
		t.Fatal("not full after -n requests")
	}
	rep := r.report(config{n: 2})
	var got, bad bool
	for _, op := range rep.Ops {
		switch op.Name {
		case "message.received":
			got = op.Count == 1 && op.P50 >= 20 && op.P50 < 1000
		case "request":
			bad = op.Errors["bad-event"] == 1
		}
	}
	if !got || !bad {
		t.Errorf("report %+v: want one message.received at ≥ 20 ms and one bad-event", rep.Ops)
	}
}
