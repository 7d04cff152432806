package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
)

// Crockford's base32: the alphabet of ULIDs, sortable as text.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newID returns prefix + a 26-character ULID-like string: 48 bits of
// milliseconds then 80 random bits, so ids sort by creation time.
func (db *DB) newID(prefix string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(db.now().UnixMilli())<<16)
	db.readRand(b[6:])
	// 128 bits → 26 base32 characters (the first carries 3 bits).
	var out [26]byte
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return prefix + string(out[:])
}

func (db *DB) readRand(p []byte) {
	db.randMu.Lock()
	defer db.randMu.Unlock()
	if _, err := io.ReadFull(db.rand, p); err != nil {
		// crypto/rand never fails on Linux; an injected source that runs
		// dry is a test bug.
		panic(fmt.Sprintf("store: random source failed: %v", err))
	}
}

// randomToken returns n random bytes, hex-encoded.
func (db *DB) randomToken(n int) string {
	p := make([]byte, n)
	db.readRand(p)
	return hex.EncodeToString(p)
}

func sha(p []byte) []byte {
	s := sha256.Sum256(p)
	return s[:]
}
