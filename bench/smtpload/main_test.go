package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/inboxd/inboxd/bench/loadstat"
)

// sink is a real SMTP server (go-smtp) that keeps what it receives and
// refuses the recipient "refused@example.com" with 550.
type sink struct {
	mu   sync.Mutex
	msgs [][]byte
}

// received returns what the server has stored so far.
func (k *sink) received() [][]byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.msgs
}

func (k *sink) NewSession(*gosmtp.Conn) (gosmtp.Session, error) { return &sinkSession{k: k}, nil }

type sinkSession struct{ k *sink }

func (s *sinkSession) Mail(string, *gosmtp.MailOptions) error { return nil }
func (s *sinkSession) Reset()                                 {}
func (s *sinkSession) Logout() error                          { return nil }
func (s *sinkSession) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	if to == "refused@example.com" {
		return &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	return nil
}
func (s *sinkSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.k.mu.Lock()
	s.k.msgs = append(s.k.msgs, b)
	s.k.mu.Unlock()
	return nil
}

func startSink(t *testing.T) (*sink, string) {
	t.Helper()
	k := &sink{}
	srv := gosmtp.NewServer(k)
	srv.Domain = "sink.example"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return k, l.Addr().String()
}

// The DATA writer must dot-stuff so that the server's reader gives back the
// message byte for byte.
func TestSendIsTransparent(t *testing.T) {
	k, addr := startSink(t)
	c, err := dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.quit()
	if !c.pipelining {
		t.Error("PIPELINING offered by the server but not seen")
	}
	l := &loader{cfg: config{from: "load@example.com", rcpt: "inbox@localhost"}, rec: loadstat.NewRecorder()}
	msg := []byte("Subject: dots\r\n\r\n.leading dot\r\n..two\r\n.\r\nmiddle . dot\r\n.last line without CRLF")
	if err := l.send(c, msg); err != nil {
		t.Fatal(err)
	}
	if len(k.received()) != 1 {
		t.Fatalf("server got %d messages, want 1", len(k.received()))
	}
	got := k.received()[0]
	header, rest, _ := bytes.Cut(got, []byte("\r\n"))
	if !strings.HasPrefix(string(header), SentHeader+": ") {
		t.Errorf("first line %q, want the %s header", header, SentHeader)
	}
	if want := string(msg) + "\r\n"; string(rest) != want {
		t.Errorf("server got\n%q\nwant\n%q", rest, want)
	}
}

// A full run reports what was accepted, and a refused recipient counts as
// an error under its reply code.
func TestRunReportsAcceptedAndRefused(t *testing.T) {
	k, addr := startSink(t)
	for _, tc := range []struct {
		rcpt       string
		ok, failed int
	}{{"inbox@localhost", 20, 0}, {"refused@example.com", 0, 5}} {
		n := tc.ok + tc.failed
		out := filepath.Join(t.TempDir(), "out.json")
		var stdout bytes.Buffer
		err := run(context.Background(), []string{"-addr", addr, "-n", strconv.Itoa(n), "-c", "3", "-size", "4096",
			"-attach-rate", "0.5", "-rcpt", tc.rcpt, "-json", out}, &stdout)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Ops []struct {
				Name   string
				Count  int
				Errors map[string]int
			}
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Ops) != 1 || rep.Ops[0].Count != tc.ok || rep.Ops[0].Errors["550"] != tc.failed {
			t.Errorf("rcpt %s: report %+v, want %d accepted and %d refused with 550\n%s", tc.rcpt, rep.Ops, tc.ok, tc.failed, stdout.String())
		}
	}
	ids := map[string]bool{}
	for _, m := range k.received() {
		i := bytes.Index(m, []byte("Message-ID: <"))
		if i < 0 {
			t.Fatalf("message without a Message-ID:\n%s", m)
		}
		id, _, _ := bytes.Cut(m[i:], []byte("\r\n"))
		ids[string(id)] = true
	}
	if len(k.received()) != 20 || len(ids) != 20 {
		t.Errorf("server got %d messages with %d distinct Message-IDs, want 20 and 20", len(k.received()), len(ids))
	}
}

// -rate spaces the messages out: n messages at r per second take at least
// (n-1)/r seconds (a lower bound only; a busy machine may take longer).
func TestRatePacesTheRun(t *testing.T) {
	k, addr := startSink(t)
	start := time.Now()
	if err := run(context.Background(), []string{"-addr", addr, "-n", "6", "-c", "3", "-rate", "50"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 5*20*time.Millisecond {
		t.Errorf("6 messages at 50/s took %v, want at least 100ms", took)
	}
	if len(k.received()) != 6 {
		t.Errorf("server got %d messages, want 6", len(k.received()))
	}
}
