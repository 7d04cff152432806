// Command smtpload is the SMTP load generator: it sends realistic multipart
// messages (unique Message-IDs, a share of replies threading onto earlier
// messages, attachments at a chosen rate) over c concurrent connections and
// reports msgs/s, MB/s, the end-of-DATA → reply latency percentiles and the
// errors by reply code.
//
//	go run ./bench/smtpload -addr 127.0.0.1:1025 -n 10000 -c 8 -size 4096 \
//	    -reuse=true -reply-share 0.5 -attach-rate 0.1 -json out.json
//
// -duration 30s sends for that long instead of -n messages. Every message
// carries X-Inboxd-Bench-Sent: <unix nanoseconds>, stamped just before DATA,
// so a webhook receiver can measure how long the message took to reach it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inboxd/inboxd/bench/loadstat"
	"github.com/inboxd/inboxd/bench/mailgen"
)

// SentHeader is stamped into every message just before DATA.
const SentHeader = "X-Inboxd-Bench-Sent"

type config struct {
	addr, rcpt, from, jsonPath    string
	n, c, size, refs, attachBytes int
	duration                      time.Duration
	reuse                         bool
	replyShare, attachRate, rate  float64
	seed                          uint64
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "smtpload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("smtpload", flag.ContinueOnError)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:1025", "SMTP server `host:port`")
	fs.IntVar(&cfg.n, "n", 10000, "messages to send (ignored when -duration is set)")
	fs.IntVar(&cfg.c, "c", 8, "concurrent connections")
	fs.IntVar(&cfg.size, "size", 4096, "approximate message size in bytes")
	fs.DurationVar(&cfg.duration, "duration", 0, "send for this long instead of -n messages")
	fs.BoolVar(&cfg.reuse, "reuse", true, "keep connections open across messages (false: one connection per message)")
	fs.Float64Var(&cfg.replyShare, "reply-share", 0.5, "share of messages that reply to an earlier one")
	fs.Float64Var(&cfg.attachRate, "attach-rate", 0.1, "share of messages with an attachment")
	fs.IntVar(&cfg.attachBytes, "attach-bytes", 0, "decoded size of every attachment (0: about half of -size)")
	fs.IntVar(&cfg.refs, "refs", 0, "extra mailing-list ids in every message's References")
	fs.StringVar(&cfg.rcpt, "rcpt", "inbox@localhost", "recipient address")
	fs.StringVar(&cfg.from, "from", "load@example.com", "envelope sender")
	fs.StringVar(&cfg.jsonPath, "json", "", "also write the report as JSON to this `file`")
	fs.Uint64Var(&cfg.seed, "seed", 1, "random seed (message content, replies, attachments)")
	fs.Float64Var(&cfg.rate, "rate", 0, "send at most this many messages per second in all (0: as fast as the server answers)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.c < 1 || cfg.size < 1 || (cfg.duration <= 0 && cfg.n < 1) {
		return errors.New("-c and -size must be positive, and -n too unless -duration is set")
	}
	if cfg.duration > 0 {
		cfg.n = 0
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}

	l := &loader{cfg: cfg, rec: loadstat.NewRecorder(), run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	if cfg.rate > 0 {
		if cfg.rate > 1e6 {
			return errors.New("-rate is at most 1000000 messages per second")
		}
		tick := time.NewTicker(time.Duration(float64(time.Second) / cfg.rate))
		defer tick.Stop()
		l.pace = tick.C
	}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range cfg.c {
		wg.Go(func() { l.worker(ctx, rand.New(rand.NewPCG(cfg.seed, uint64(w)))) })
	}
	wg.Wait()
	rep := l.rec.Report("smtpload", map[string]any{
		"addr": cfg.addr, "n": cfg.n, "c": cfg.c, "size": cfg.size, "duration": cfg.duration.String(),
		"reuse": cfg.reuse, "rate": cfg.rate, "reply_share": cfg.replyShare, "attach_rate": cfg.attachRate, "attach_bytes": cfg.attachBytes, "refs": cfg.refs,
	}, time.Since(start))
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if cfg.jsonPath != "" {
		return rep.WriteJSONFile(cfg.jsonPath)
	}
	return nil
}

// sent is a message the server accepted, which later ones may reply to.
type sent struct {
	id, subject string
	refs        []string // its References plus its own id: a reply's References
}

type loader struct {
	cfg  config
	rec  *loadstat.Recorder
	run  string // makes Message-IDs unique across runs
	next atomic.Int64
	pace <-chan time.Time // with -rate, one tick per message

	mu     sync.Mutex
	recent [1024]sent // a ring of accepted messages
	nSent  int
}

func (l *loader) accepted(s sent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recent[l.nSent%len(l.recent)] = s
	l.nSent++
}

func (l *loader) parent(rng *rand.Rand) (sent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nSent == 0 {
		return sent{}, false
	}
	return l.recent[rng.IntN(min(l.nSent, len(l.recent)))], true
}

// maxChain bounds the References a reply inherits: replies to replies would
// otherwise grow without end over a long run.
const maxChain = 20

// compose builds message i: a reply to a recently accepted message at
// -reply-share, otherwise the first of a new thread.
func (l *loader) compose(i int64, rng *rand.Rand) (sent, []byte) {
	m := mailgen.Message{
		ID:         fmt.Sprintf("load.%s.%d@example.com", l.run, i),
		To:         l.cfg.rcpt,
		Date:       time.Now(),
		Size:       l.cfg.size,
		Attachment: rng.Float64() < l.cfg.attachRate,
	}
	if m.Attachment {
		m.AttachmentBytes = l.cfg.attachBytes
	}
	for r := range l.cfg.refs {
		// Shared by every 50th message, like a long mailing-list thread
		// whose older messages were never received.
		m.References = append(m.References, fmt.Sprintf("list.%d.%d@lists.example.org", i%50, r))
	}
	if p, ok := l.parent(rng); ok && rng.Float64() < l.cfg.replyShare {
		m.Subject = "Re: " + strings.TrimPrefix(p.subject, "Re: ") // no stacked Re:
		m.InReplyTo = p.id
		m.References = append(m.References, p.refs...)
	} else {
		m.Subject = mailgen.Subject(rng)
	}
	chain := append(slices.Clone(m.References[l.cfg.refs:]), m.ID)
	if len(chain) > maxChain {
		// Trimmed from the front keeping the first, as mail clients do.
		chain = append(chain[:1], chain[len(chain)-maxChain+1:]...)
	}
	return sent{id: m.ID, subject: m.Subject, refs: chain}, mailgen.Build(m, rng)
}

func (l *loader) worker(ctx context.Context, rng *rand.Rand) {
	var c *client
	defer func() {
		if c != nil {
			c.quit()
		}
	}()
	for ctx.Err() == nil {
		if l.pace != nil {
			select {
			case <-l.pace:
			case <-ctx.Done():
				return
			}
		}
		i := l.next.Add(1) - 1
		if l.cfg.n > 0 && i >= int64(l.cfg.n) {
			return
		}
		s, msg := l.compose(i, rng)
		if c == nil {
			var err error
			if c, err = dial(l.cfg.addr); err != nil {
				l.rec.Fail("message", code(err))
				time.Sleep(10 * time.Millisecond) // do not spin on a refusing server
				continue
			}
		}
		if err := l.send(c, msg); err != nil {
			l.rec.Fail("message", code(err))
			c.conn.Close() // the session's state is unknown: start over
			c = nil
			continue
		}
		l.accepted(s)
		if !l.cfg.reuse {
			c.quit()
			c = nil
		}
	}
}

// send runs one transaction and records its end-of-DATA → reply latency.
// MAIL, RCPT and DATA go out in one write when the server offers
// PIPELINING (RFC 2920), as Postfix sends them.
func (l *loader) send(c *client, msg []byte) error {
	cmds := []struct {
		want int
		line string
	}{{250, "MAIL FROM:<" + l.cfg.from + ">"}, {250, "RCPT TO:<" + l.cfg.rcpt + ">"}, {354, "DATA"}}
	first := 0 // of the commands sent but not yet answered
	for i, cmd := range cmds {
		c.w.WriteString(cmd.line)
		c.w.WriteString("\r\n")
		if c.pipelining && i < len(cmds)-1 {
			continue
		}
		if err := c.w.Flush(); err != nil {
			return err
		}
		for _, sent := range cmds[first : i+1] {
			if _, err := c.reply(sent.want); err != nil {
				return err
			}
		}
		first = i + 1
	}
	fmt.Fprintf(c.w, "%s: %d\r\n", SentHeader, time.Now().UnixNano())
	writeDotStuffed(c.w, msg)
	if err := c.w.Flush(); err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := c.cmd(250, "."); err != nil {
		return err
	}
	l.rec.Observe("message", time.Since(t0), len(msg))
	return nil
}

// client is a minimal SMTP client. The load tool shares the machine with
// the server it measures, so it writes DATA in large writes, as Postfix's
// smtp-source does: go-smtp's client dot-stuffs byte by byte, which was half
// of this tool's CPU at 64 KB.
// replyTimeout bounds the wait for any reply, as go-smtp's client does, so
// that a stalled server fails a message instead of hanging the run.
const replyTimeout = time.Minute

type client struct {
	conn       net.Conn
	r          *bufio.Reader
	w          *bufio.Writer
	pipelining bool // offered in the EHLO reply
}

func dial(addr string) (*client, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &client{conn: conn, r: bufio.NewReader(conn), w: bufio.NewWriterSize(&deadlineWriter{conn}, 64<<10)}
	_, err = c.reply(220)
	var ehlo []string
	if err == nil {
		ehlo, err = c.cmd(250, "EHLO smtpload.example.com")
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	for _, l := range ehlo[1:] {
		c.pipelining = c.pipelining || len(l) > 4 && strings.EqualFold(l[4:], "PIPELINING")
	}
	return c, nil
}

// cmd sends one command line and reads its reply, which must carry want.
func (c *client) cmd(want int, line string) ([]string, error) {
	c.w.WriteString(line)
	c.w.WriteString("\r\n")
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	return c.reply(want)
}

// reply reads a reply's lines: an *smtpError unless its code is want.
func (c *client) reply(want int) ([]string, error) {
	var lines []string
	c.conn.SetReadDeadline(time.Now().Add(replyTimeout))
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		n, err := strconv.Atoi(line[:min(3, len(line))])
		if err != nil || len(line) < 3 {
			return nil, fmt.Errorf("malformed reply %q", line)
		}
		lines = append(lines, line)
		if len(line) > 3 && line[3] == '-' {
			continue // a multiline reply goes on
		}
		if n != want {
			return nil, &smtpError{code: n, line: line}
		}
		return lines, nil
	}
}

func (c *client) quit() {
	c.cmd(221, "QUIT")
	c.conn.Close()
}

// writeDotStuffed writes msg (CRLF lines) as DATA content: a dot doubled at
// the start of every line, a final CRLF if missing, and the caller sends
// the closing dot.
func writeDotStuffed(w *bufio.Writer, msg []byte) {
	for len(msg) > 0 {
		if msg[0] == '.' {
			w.WriteByte('.')
		}
		i := bytes.IndexByte(msg, '\n')
		if i < 0 {
			w.Write(msg)
			w.WriteString("\r\n")
			return
		}
		w.Write(msg[:i+1])
		msg = msg[i+1:]
	}
}

// deadlineWriter gives every write replyTimeout to go through.
type deadlineWriter struct{ conn net.Conn }

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.conn.SetWriteDeadline(time.Now().Add(replyTimeout))
	return d.conn.Write(p)
}

type smtpError struct {
	code int
	line string
}

func (e *smtpError) Error() string { return e.line }

// code names an error for the report: the SMTP reply code, or "net".
func code(err error) string {
	if se, ok := errors.AsType[*smtpError](err); ok {
		return strconv.Itoa(se.code)
	}
	return "net"
}
