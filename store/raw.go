package store

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// The raw bytes of a message received in memory (Incoming.Raw, at most
// the 1 MiB past which SMTP spools to disk) are stored in contents.data
// compressed with S2's block format when that saves at least an eighth,
// and contents.raw_format (migration 0019) says which. Raw bytes are most
// of what a message writes: compressed, a 64 KB message of the load
// generator stores 43 KB in all instead of 93 KB, a 4 KB one 7.5 KB
// instead of 8.9 KB, for about 40 µs of S2 per 64 KB in the SMTP session
// (issue 18). A message received into the spool keeps its bytes plain in
// raw_chunks, and so does mail that S2 cannot shrink (base64 attachments,
// mostly); rows written before 0019 are plain.
const (
	rawPlain = 0
	rawS2    = 1
)

// packRaw returns what contents.data stores of raw, and its raw_format.
// It runs in the caller's goroutine (prepare), not in the single writer.
func packRaw(raw []byte) ([]byte, int) {
	if len(raw) < 512 {
		return raw, rawPlain // fits a page either way
	}
	z := s2.Encode(nil, raw)
	if len(z) > len(raw)-len(raw)/8 {
		return raw, rawPlain
	}
	return z, rawS2
}

var errBadRaw = errors.New("malformed stored raw message")

// unpackRaw is the inverse of packRaw for a message of size raw bytes
// (messages.raw_size): a damaged row is an error, never other bytes.
func unpackRaw(data []byte, format int, size int64) ([]byte, error) {
	switch format {
	case rawPlain:
		return data, nil
	case rawS2:
		// The stated length is checked before Decode allocates it.
		if n, err := s2.DecodedLen(data); err != nil || int64(n) != size {
			return nil, fmt.Errorf("%w: decoded length %d of %d (%v)", errBadRaw, n, size, err)
		}
		raw, err := s2.Decode(nil, data)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errBadRaw, err)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("%w: format %d", errBadRaw, format)
}
