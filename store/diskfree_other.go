//go:build !unix

package store

// freeBytes cannot tell the free space here: the migrations do not check.
func freeBytes(string) (uint64, bool) { return 0, false }
