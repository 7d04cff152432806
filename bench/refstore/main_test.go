package main

import (
	"bufio"
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gosmtp "github.com/emersion/go-smtp"
)

// lineWriter hands every line written to it to a channel: the test waits
// for the start line without polling.
type lineWriter struct{ lines chan string }

func (w lineWriter) Write(p []byte) (int, error) {
	sc := bufio.NewScanner(strings.NewReader(string(p)))
	for sc.Scan() {
		select {
		case w.lines <- sc.Text():
		default: // nobody reads any more
		}
	}
	return len(p), nil
}

var startedLine = regexp.MustCompile(`msg="refstore started" smtp=(\S+)`)

// start runs the reference store on a loopback port and returns its SMTP
// address and data dir; it stops (and must stop cleanly) when the test ends.
func start(t *testing.T) (addr, dir string) {
	t.Helper()
	dir = t.TempDir()
	lines := make(chan string, 64)
	log := slog.New(slog.NewTextHandler(lineWriter{lines}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-data", dir, "-smtp-addr", "127.0.0.1:0"}, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	for {
		select {
		case l := <-lines:
			if m := startedLine.FindStringSubmatch(l); m != nil {
				return m[1], dir
			}
		case err := <-done:
			t.Fatalf("run ended before it listened: %v", err)
		}
	}
}

func send(t *testing.T, addr, raw string) {
	t.Helper()
	c, err := gosmtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SendMail("a@example.com", []string{"inbox@localhost"}, strings.NewReader(raw)); err != nil {
		t.Fatalf("send: %v", err)
	}
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
}

func message(id, headers, text, html string) string {
	return "From: Alice <alice@example.com>\r\nTo: inbox@localhost\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?= " + id + "\r\n" +
		"Message-ID: <" + id + ">\r\n" + headers +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=mix\r\n\r\n" +
		"--mix\r\nContent-Type: multipart/alternative; boundary=alt\r\n\r\n" +
		"--alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + text + "\r\n" +
		"--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>" + html + "</p>\r\n--alt--\r\n" +
		"--mix\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQ=\r\n--mix--\r\n"
}

// TestStoresThreadsAndIndexes: every 250 is a committed row; replies join
// their parent's thread by In-Reply-To or, failing that, the newest known
// id of References; an SMTP retry of a stored Message-ID is accepted and
// stored once; the search row holds the subject and the text part only.
func TestStoresThreadsAndIndexes(t *testing.T) {
	addr, dir := start(t)
	send(t, addr, message("root@x", "", "zeppelin one", "quokka"))
	send(t, addr, message("other@x", "", "unrelated", ""))
	send(t, addr, message("r1@x", "In-Reply-To: <root@x>\r\n", "reply", ""))
	send(t, addr, message("r2@x", "References: <unknown@x> <root@x>\r\n <r1@x> <missing@x>\r\n", "second reply", ""))
	send(t, addr, message("orphan@x", "In-Reply-To: <never@x>\r\n", "orphan", ""))
	send(t, addr, message("r1@x", "In-Reply-To: <root@x>\r\n", "reply", "")) // a retry

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "refstore.db")+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	threads := map[string]int64{}
	rows, err := db.Query(`SELECT message_id, thread_id FROM messages ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var th int64
		if err := rows.Scan(&id, &th); err != nil {
			t.Fatal(err)
		}
		if _, dup := threads[id]; dup {
			t.Errorf("%s stored twice", id)
		}
		threads[id] = th
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(threads) != 5 {
		t.Fatalf("stored %v, want 5 messages", threads)
	}
	root := threads["root@x"]
	if threads["r1@x"] != root || threads["r2@x"] != root {
		t.Errorf("replies in threads %d and %d, want the root's %d", threads["r1@x"], threads["r2@x"], root)
	}
	if threads["other@x"] == root || threads["orphan@x"] == root || threads["orphan@x"] == threads["other@x"] {
		t.Errorf("unrelated messages share a thread: %v", threads)
	}
	for q, want := range map[string]int{"zeppelin": 1, "quokka": 0, "subject:grüße": 5, "reply": 2, "addresses:alice": 5} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?`, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("search %q: %d rows, want %d", q, n, want)
		}
	}
	var raw []byte
	if err := db.QueryRow(`SELECT raw FROM messages WHERE message_id = 'root@x'`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if want := message("root@x", "", "zeppelin one", "quokka"); string(raw) != want {
		t.Errorf("raw bytes differ from what was sent:\n%q\nwant\n%q", raw, want)
	}
}
