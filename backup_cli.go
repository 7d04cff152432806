package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/inboxd/inboxd/store"
)

// backupCmd is `inboxd backup FILE`: a consistent copy of the database,
// taken while the server runs and ingests (or while it is stopped). It is
// written to a temporary file beside FILE, synced, checked (quick_check
// and the rows of every table, printed), and only then put at FILE, which
// it never overwrites.
func backupCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fset := flag.NewFlagSet("backup", flag.ContinueOnError)
	db, _, err := openData(ctx, fset, args, getenv, "usage: inboxd backup FILE [--data DIR]")
	if err != nil {
		return err
	}
	defer db.Close()
	dst := fset.Arg(0)
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("%s exists; a backup never overwrites a file", dst)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	start := time.Now()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName) // after the link below, only the temporary name goes
	if err := db.BackupTo(ctx, tmpName); err != nil {
		return err
	}
	if err := syncFile(tmpName); err != nil {
		return err
	}
	tables, err := store.CheckBackup(ctx, tmpName)
	if err != nil {
		return err
	}
	// A hard link puts the copy at dst atomically, and fails if dst
	// appeared meanwhile: rename would replace it.
	if err := os.Link(tmpName, dst); err != nil {
		return fmt.Errorf("put the backup at %s: %w", dst, err)
	}
	// Now, not only when deferred: the report below may be the write that
	// kills the process (SIGPIPE, `inboxd backup f | head -1`).
	os.Remove(tmpName)
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	info, err := os.Stat(dst)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup %s: %d bytes in %s, quick_check ok\n", dst, info.Size(), time.Since(start).Round(time.Millisecond))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tROWS")
	for _, t := range tables {
		fmt.Fprintf(tw, "%s\t%d\n", t.Table, t.Rows)
	}
	return tw.Flush()
}

// syncDir fsyncs a directory, so that a file renamed into it stays. Not
// on Windows: a directory opened for reading cannot be flushed there
// (FlushFileBuffers needs write access), and NTFS keeps a rename without.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	return syncFile(dir)
}

// syncFile fsyncs a file or directory.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
