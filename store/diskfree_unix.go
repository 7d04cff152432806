//go:build unix

package store

import "golang.org/x/sys/unix"

// freeBytes returns the bytes an unprivileged writer may still use on the
// file system that holds dir; ok is false when that cannot be told.
func freeBytes(dir string) (free uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}
