package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// errLocked is lockFile's answer when another process holds the lock.
var errLocked = errors.New("locked")

// lockDataDir takes the exclusive lock on <dir>/inboxd.lock that makes a
// server the only one on its data directory (two would both run the
// queues: every webhook and send twice), and writes its PID there for the
// message a second server prints. The lock goes with the process, however
// it ends; the file stays. The CLI subcommands open the database without
// it: they work beside a running server.
func lockDataDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "inboxd.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := lockFile(f); err != nil {
		defer f.Close()
		if errors.Is(err, errLocked) {
			holder := "unknown"
			if b, err := os.ReadFile(f.Name()); err == nil && strings.TrimSpace(string(b)) != "" {
				holder = strings.TrimSpace(string(b))
			}
			return nil, fmt.Errorf("data directory %s is in use by another inboxd (pid %s)", dir, holder)
		}
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	return func() { f.Close() }, nil
}
