//go:build unix

package store

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The database's files hold every message, the webhook secrets and the
// cursor key: under the usual umask (022) in a directory others may
// enter, a new database, its WAL and its shared-memory file are still
// the owner's only, and an existing one others could read is tightened.
func TestDatabaseFilesAreTheOwnersOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "inboxd.db")
	db, b, stop := openRunning(t, Options{Path: path})
	if _, err := db.Ingest(context.Background(), incoming(b.Inbox.ID, "Subject: s\r\n\r\nhello\r\n")); err != nil {
		t.Fatal(err)
	}
	files := []string{path, path + "-wal", path + "-shm"}
	wantPrivate(t, files...)
	stop() // a clean close removes the WAL and -shm

	// An older inboxd left the database readable by others, and a crash
	// its WAL.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	openRunning(t, Options{Path: path, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	wantPrivate(t, files...)
	if n := strings.Count(logged.String(), "database file was readable by others"); n != 2 {
		t.Errorf("%d warnings logged, want 2 (the database and its WAL):\n%s", n, logged.String())
	}
}

func wantPrivate(t *testing.T, files ...string) {
	t.Helper()
	for _, name := range files {
		fi, err := os.Stat(name)
		if err != nil {
			t.Error(err)
			continue
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %#o, want 0600", filepath.Base(name), perm)
		}
	}
}
