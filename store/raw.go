package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/s2"
)

// The raw bytes of a message of at most maxPackedRaw are stored in
// contents.data compressed with S2's block format when that saves at
// least an eighth, and contents.raw_format (migration 0019) says which.
// Raw bytes are most of what a message writes: compressed, a 64 KB
// message of the load generator stores 43 KB in all instead of 93 KB, a
// 4 KB one 7.5 KB instead of 8.9 KB, for about 40 µs of S2 per 64 KB in
// the SMTP session (issue 18). Larger messages (SMTP's spooled ones in
// raw_chunks, large API sends in contents.data) stay plain, to be
// streamed in pieces rather than decoded whole, and so does mail that S2
// cannot shrink (base64 attachments, mostly); rows written before 0019
// are plain.
//
// Format rawS2 is the S2 block followed by the CRC-32C (Castagnoli) of
// the raw bytes, big-endian: the block format has no checksum of its own,
// and one damaged byte of a copy would garble the rest of the message
// without an error.
const (
	rawPlain = 0
	rawS2    = 1

	// maxPackedRaw bounds the raw bytes stored compressed: a read decodes
	// them whole.
	maxPackedRaw = 1 << 20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// packedRaw is a message's raw bytes as contents stores them.
type packedRaw struct {
	data   []byte // contents.data
	format int    // contents.raw_format
}

// packRaw returns what contents stores of raw. It runs in the caller's
// goroutine (prepare), not in the single writer.
func packRaw(raw []byte) packedRaw {
	if raw == nil {
		raw = []byte{} // nil would be bound as NULL
	}
	if len(raw) < 512 || len(raw) > maxPackedRaw {
		return packedRaw{raw, rawPlain} // short: it fits a page either way
	}
	z := s2.Encode(make([]byte, 0, s2.MaxEncodedLen(len(raw))+4), raw)
	if len(z)+4 > len(raw)-len(raw)/8 {
		return packedRaw{raw, rawPlain}
	}
	return packedRaw{binary.BigEndian.AppendUint32(z, crc32.Checksum(raw, crc32c)), rawS2}
}

var errBadRaw = errors.New("malformed stored raw message")

// unpack is the inverse of packRaw for a message of size raw bytes
// (messages.raw_size): a damaged row is an error, never other bytes.
func (r packedRaw) unpack(size int64) ([]byte, error) {
	data := r.data
	switch r.format {
	case rawPlain:
		return data, nil
	case rawS2:
		if len(data) < 4 {
			return nil, fmt.Errorf("%w: %d bytes", errBadRaw, len(data))
		}
		block, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
		// The stated length is checked before Decode allocates it.
		if n, err := s2.DecodedLen(block); err != nil || int64(n) != size {
			return nil, fmt.Errorf("%w: decoded length %d of %d (%v)", errBadRaw, n, size, err)
		}
		raw, err := s2.Decode(nil, block)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errBadRaw, err)
		}
		if crc32.Checksum(raw, crc32c) != sum {
			return nil, fmt.Errorf("%w: checksum", errBadRaw)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("%w: format %d", errBadRaw, r.format)
}
