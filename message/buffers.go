package message

import (
	"bufio"
	"io"
	"sync"
)

// Read buffer sizes. A line longer than its buffer comes back in pieces
// (lineReader.readLine); the sizes are the longest lines each reader
// handles whole.
const (
	topBufSize  = 32 << 10 // over the message
	partBufSize = 8 << 10  // over one multipart's body
	// Buffers that grew past these while parsing one large message are
	// dropped rather than kept in the pool for every later one.
	maxPooledScratch = 256 << 10
	maxPooledCapture = 64 << 10
	maxPooledDepth   = 4
)

// readBufs are the buffers one parse reads through. They were a third of
// the bytes a 4 KB message's parse allocated (a reader per multipart,
// sized to the message), so parses take them from a pool and give them
// back when done. Nothing a parse returns points into them: lines kept
// are copied (readLine with copy, go-message's header reader) and decoded
// bodies become strings or slices of their own.
type readBufs struct {
	top     *bufio.Reader
	parts   []*bufio.Reader // one per multipart nesting level: a nested multipart reads while its parent's reader is in use
	scratch []byte          // the decoded text and HTML bodies, one after the other
	capture []byte          // a multipart's first bytes, until its first delimiter (captureReader); one multipart captures at a time
}

var bufPool = sync.Pool{New: func() any { return new(readBufs) }}

// topReader returns the message's reader, reading from r.
func (b *readBufs) topReader(r io.Reader) *bufio.Reader {
	if b.top == nil {
		b.top = bufio.NewReaderSize(r, topBufSize)
	} else {
		b.top.Reset(r)
	}
	return b.top
}

// partReader returns the reader of the multipart at depth, reading from r.
// Multiparts at one depth follow one another, so they share it.
func (b *readBufs) partReader(depth int, r io.Reader) *bufio.Reader {
	for len(b.parts) <= depth {
		b.parts = append(b.parts, nil)
	}
	if b.parts[depth] == nil {
		b.parts[depth] = bufio.NewReaderSize(r, partBufSize)
	} else {
		b.parts[depth].Reset(r)
	}
	return b.parts[depth]
}

// release gives b back to the pool, without the message's readers and
// without buffers grown for one large message.
func (b *readBufs) release() {
	if b.top != nil {
		b.top.Reset(nil)
	}
	for _, r := range b.parts {
		if r != nil {
			r.Reset(nil)
		}
	}
	if len(b.parts) > maxPooledDepth {
		clear(b.parts[maxPooledDepth:])
		b.parts = b.parts[:maxPooledDepth]
	}
	if cap(b.scratch) > maxPooledScratch {
		b.scratch = nil
	}
	if cap(b.capture) > maxPooledCapture {
		b.capture = nil
	}
	b.scratch, b.capture = b.scratch[:0], b.capture[:0]
	bufPool.Put(b)
}
