// Package spool holds bytes that may be too large to keep in memory: a
// message while it is received, parsed and stored, and the decoded
// attachments of a large message. A Buffer keeps its content in memory until
// it passes the Dir's limit, then moves it to a temporary file, so a 25 MB
// message costs a few megabytes of memory instead of several copies of
// itself.
//
// A spool file is unlinked as soon as it is created (where the OS allows),
// so a crash leaves nothing behind; what was spooled was never acknowledged.
package spool

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// Dir creates Buffers that spill into one directory.
type Dir struct {
	path   string
	memMax int
}

// New returns a Dir spilling into path (created if missing) once a buffer
// holds more than memMax bytes. Files left by an earlier process (on systems
// where open files cannot be unlinked) are removed.
func New(path string, memMax int) (*Dir, error) {
	if err := os.RemoveAll(path); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return &Dir{path: path, memMax: memMax}, nil
}

// Buffer returns an empty buffer expecting about sizeHint bytes (0 when
// unknown). A nil Dir returns buffers that never spill.
func (d *Dir) Buffer(sizeHint int) *Buffer {
	b := &Buffer{d: d}
	if sizeHint > 0 && (d == nil || sizeHint <= d.memMax) {
		b.mem = make([]byte, 0, sizeHint+1) // +1: ReadFrom wants room to see EOF
	}
	return b
}

// Buffer is an append-only byte store: in memory while small, a temporary
// file once large. Write to it, then read it any number of times with
// Reader. It is not safe for concurrent writes.
type Buffer struct {
	d      *Dir
	mem    []byte
	f      *os.File
	w      *bufio.Writer // in front of f: decoders write a line at a time
	n      int64
	remove string // path to remove on Close when unlinking at creation failed
}

// Write appends p, moving the content to a file when it outgrows memory.
func (b *Buffer) Write(p []byte) (int, error) {
	if b.f == nil && (b.d == nil || len(b.mem)+len(p) <= b.d.memMax) {
		b.mem = append(b.mem, p...)
		b.n += int64(len(p))
		return len(p), nil
	}
	if b.f == nil {
		if err := b.spill(); err != nil {
			return 0, err
		}
	}
	n, err := b.w.Write(p)
	b.n += int64(n)
	if err != nil {
		return n, fmt.Errorf("spool: %w", err)
	}
	return n, nil
}

// chunkSize is the size of the pooled buffers ReadFrom reads into.
const chunkSize = 64 << 10

var chunks = sync.Pool{New: func() any { c := make([]byte, chunkSize); return &c }}

// ReadFrom appends everything r yields. Without a size hint the content is
// read into pooled 64 KB chunks first and copied into memory once its size
// is known, in one exactly sized slice: a 4 KB message costs 4 KB, not the
// 12 KB that growing by doubling from 4 KB did (252 KB at 64 KB). With a
// hint it is read straight into memory. Once in a file it streams there.
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	var held []*[]byte // chunks read, not yet in b; all full but the last
	last := 0          // bytes in the last one
	defer func() {
		for _, c := range held {
			chunks.Put(c)
		}
	}()
	flush := func() error {
		if len(held) == 0 {
			return nil
		}
		size := (len(held)-1)*chunkSize + last
		if b.f == nil && (b.d == nil || len(b.mem)+size <= b.d.memMax) {
			b.mem = slices.Grow(b.mem, size)
		}
		for i, c := range held {
			data := *c
			if i == len(held)-1 {
				data = data[:last]
			}
			if _, err := b.Write(data); err != nil {
				return err
			}
			chunks.Put(c)
			held[i] = nil
		}
		held, last = held[:0], 0
		return nil
	}
	for {
		var n int
		var err error
		if b.f == nil && len(held) == 0 && len(b.mem) < cap(b.mem) {
			// Room the size hint made.
			n, err = r.Read(b.mem[len(b.mem):cap(b.mem)])
			b.mem = b.mem[:len(b.mem)+n]
			b.n += int64(n)
			if b.d != nil && len(b.mem) > b.d.memMax {
				if serr := b.spill(); serr != nil {
					return total + int64(n), serr
				}
			}
		} else {
			if len(held) == 0 || last == chunkSize {
				held, last = append(held, chunks.Get().(*[]byte)), 0
			}
			n, err = r.Read((*held[len(held)-1])[last:])
			last += n
			if b.f != nil || b.d != nil && len(b.mem)+(len(held)-1)*chunkSize+last > b.d.memMax {
				// Past memory: to the file, a chunk at a time.
				if ferr := flush(); ferr != nil {
					return total, ferr
				}
			}
		}
		total += int64(n)
		if err == io.EOF {
			return total, flush()
		}
		if err != nil {
			if ferr := flush(); ferr != nil {
				return total, ferr
			}
			return total, err
		}
	}
}

// spill moves the memory content to a new temporary file.
func (b *Buffer) spill() error {
	f, err := os.CreateTemp(b.d.path, "spool-*")
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		b.remove = f.Name() // e.g. Windows: removed on Close instead
	}
	if _, err := f.Write(b.mem); err != nil {
		f.Close()
		return fmt.Errorf("spool: %w", err)
	}
	b.f, b.w, b.mem = f, bufio.NewWriterSize(f, 256<<10), nil
	return nil
}

// Len is the number of bytes written.
func (b *Buffer) Len() int64 { return b.n }

// Bytes returns the content when it is held in memory; ok is false once it
// has moved to a file.
func (b *Buffer) Bytes() (data []byte, ok bool) {
	if b.f != nil {
		return nil, false
	}
	if b.mem == nil {
		return []byte{}, true
	}
	return b.mem, true
}

// Reader reads the content from the start; each call returns a new reader.
func (b *Buffer) Reader() io.Reader {
	if b.f == nil {
		return bytes.NewReader(b.mem)
	}
	if err := b.w.Flush(); err != nil {
		return errReader{fmt.Errorf("spool: %w", err)}
	}
	return io.NewSectionReader(b.f, 0, b.n)
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// Close releases the file, if any. The buffer is empty afterwards.
func (b *Buffer) Close() error {
	var err error
	if b.f != nil {
		err = b.f.Close()
		if b.remove != "" {
			err = os.Remove(b.remove)
		}
	}
	b.f, b.w, b.mem, b.n, b.remove = nil, nil, nil, 0, ""
	return err
}
