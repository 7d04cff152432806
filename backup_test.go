package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/inboxd/inboxd/store"
)

// A backup taken while 8 clients ingest is a database inboxd opens, that
// passes quick_check and holds every message acknowledged before the
// backup began; a second backup to the same file is refused.
func TestBackupDuringIngest(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, data)
	var mu sync.Mutex
	var acked []string
	enough := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("c%d-%d@backup.test", c, i)
				body := "From: a@example.com\r\nTo: inbox@localhost\r\nMessage-ID: <" + id + ">\r\nSubject: " + id + "\r\n\r\nbody " + id + "\r\n"
				if err := sendMail(s.smtp, "a@example.com", []string{"inbox@localhost"}, body); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, id)
				if len(acked) == 200 {
					close(enough)
				}
				mu.Unlock()
			}
		})
	}
	<-enough
	mu.Lock()
	before := append([]string(nil), acked...)
	mu.Unlock()
	dst := filepath.Join(t.TempDir(), "copy.db")
	var out bytes.Buffer
	err := run(context.Background(), []string{"backup", dst, "--data", data}, func(string) string { return "" }, &out, io.Discard)
	close(stop) // the clients sent all along the backup

	wg.Wait()
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "quick_check ok") || !strings.Contains(out.String(), "messages ") {
		t.Errorf("backup output:\n%s", out.String())
	}

	// The copy opens with inboxd (as a data dir's database) and holds
	// every message acknowledged before the backup began.
	restored := t.TempDir()
	raw, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, "inboxd.db"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), store.Options{Path: filepath.Join(restored, "inboxd.db")})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	db.Close()
	c, err := sql.Open("sqlite", filepath.Join(restored, "inboxd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	missing := 0
	for _, id := range before {
		var n int
		if err := c.QueryRow(`SELECT count(*) FROM messages WHERE rfc_message_id = ?`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of the %d messages acknowledged before the backup are not in it", missing, len(before))
	}

	err = run(context.Background(), []string{"backup", dst, "--data", data}, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "never overwrites") {
		t.Errorf("a second backup to the same file: %v", err)
	}
	if after, _ := os.ReadFile(dst); !bytes.Equal(after, raw) {
		t.Error("the refused backup changed the file")
	}
}

// `inboxd backup f | head -1`: a report written to a closed pipe kills
// the process (SIGPIPE) after the copy is in place, and the temporary
// name beside it is gone by then.
func TestBackupKilledWhileReportingLeavesNoTemporaryFile(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	startServer(t, data)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // nobody reads the report
	dir := t.TempDir()
	cmd := exec.Command(bin, "backup", filepath.Join(dir, "copy.db"), "--data", data)
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGPIPE {
		t.Fatalf("backup with its report to a closed pipe: %v (want killed by SIGPIPE)\n%s", err, stderr.String())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "copy.db" {
		t.Errorf("after the backup: %v, want only copy.db", names)
	}
}
