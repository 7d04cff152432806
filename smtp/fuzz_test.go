package smtp

import (
	"bufio"
	"bytes"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// replyShape is the shape of every line the server may send (RFC 5321
// §4.2): a code, then a space or a hyphen.
var replyShape = regexp.MustCompile(`^[2-5][0-9][0-9][ -]`)

// FuzzSession drives a real server on loopback with arbitrary client
// bytes, as go-smtp's smuggling table does with chosen ones, and holds it
// to what a sender relies on: the session ends when the client stops;
// every reply is a well-formed reply line without internal detail; and
// exactly as many messages are stored as "250 … OK: queued" answers were
// given, so no mail is stored unacknowledged and none acknowledged is
// lost.
func FuzzSession(f *testing.F) {
	for _, seed := range []string{
		"EHLO c\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<inbox@localhost>\r\nDATA\r\nSubject: s\r\n\r\nbody\r\n.\r\nQUIT\r\n",
		"EHLO c\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<inbox@localhost>\r\nBDAT 6 LAST\r\nx\r\ny\r\nQUIT\r\n",
		"EHLO c\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<inbox@localhost>\r\nBDAT 3\r\nabcBDAT 0 LAST\r\n",
		// Smuggling attempts: ends of data that are not CRLF.CRLF.
		"EHLO c\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<inbox@localhost>\r\nDATA\r\nx\n.\nMAIL FROM:<evil@x>\r\nRCPT TO:<inbox@localhost>\r\nDATA\r\ny\r\n.\r\n",
		"EHLO c\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<inbox@localhost>\r\nDATA\r\nx\r\n.\nMAIL FROM:<evil@x>\r\n.\r\n",
		"EHLO c\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<inbox@localhost>\r\nDATA\r\nx\n.\r\nRSET\r\n.\r\n",
		"EHLO c\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<inbox@localhost>\r\nRCPT TO:<INBOX+Tag@LOCALHOST>\r\nRCPT TO:<who@nowhere.example>\r\nDATA\r\n\r\n.\r\n",
		"HELO c\r\nAUTH PLAIN AGZvbwBiYXI=\r\nSTARTTLS\r\nMAIL FROM:<>\r\nNOOP\r\nVRFY x\r\nRSET\r\n",
		"EHLO c\r\nMAIL FROM:<a@example.com> SIZE=999999999999\r\nMAIL FROM:<a@example.com> BODY=8BITMIME SMTPUTF8\r\nRCPT TO:<inbox@localhost>\r\nDATA\r\n\xff\xfe\r\n.\r\n",
		"\x00\x01\r\n\r\nDATA\r\n.\r\nBDAT x\r\nBDAT 99999999999 LAST\r\n",
	} {
		f.Add([]byte(seed))
	}
	// The server's log goes to a buffer, not to f: *F methods may not be
	// called while the fuzz target runs. An error in it is a failure of
	// ours, which no client input may cause.
	var logs lockedBuffer
	e := start(f, Config{CommandTimeout: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	raw, err := sql.Open("sqlite", e.dbPath+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { raw.Close() })
	stored := func(t *testing.T) int {
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM messages`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		before := stored(t)
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang fails, never blocks the run
		go func() {
			c.Write(in)
			c.(*net.TCPConn).CloseWrite() // the client has said all it will
		}()
		acks := 0
		sc := bufio.NewScanner(c)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !replyShape.MatchString(line) {
				t.Fatalf("not a reply line: %q", line)
			}
			if strings.Contains(line, "transaction failed") || strings.Contains(strings.ToLower(line), "sql") {
				t.Fatalf("internal detail in a reply: %q", line)
			}
			if strings.HasPrefix(line, "250 2.0.0 OK: queued") {
				acks++
			}
		}
		if err := sc.Err(); err != nil && !isReset(err) {
			t.Fatalf("the session did not end: %v", err)
		}
		if l := logs.take(); strings.Contains(l, "level=ERROR") {
			t.Fatalf("the server logged an error of its own for %q:\n%s", in, l)
		}
		if got := stored(t) - before; got != acks {
			t.Fatalf("%d messages stored, %d acknowledged, for %q", got, acks, in)
		}
	})
}

// isReset reports a connection the server closed with client bytes unread.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// lockedBuffer is a log sink shared by the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// take returns what was logged since the last take.
func (b *lockedBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}
