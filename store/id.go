package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Crockford's base32: the alphabet of ULIDs, sortable as text.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newID returns prefix + a 26-character ULID-like string: 48 bits of
// milliseconds then 80 random bits, so ids sort by creation time.
func (db *DB) newID(prefix string) string {
	var rest [10]byte
	db.readRand(rest[:])
	return prefix + ulid(db.now().UnixMilli(), rest)
}

// ulid is 48 bits of milliseconds and then rest, in 26 characters of
// Crockford's base32.
func ulid(ms int64, rest [10]byte) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(ms)<<16)
	copy(b[6:], rest[:])
	// 128 bits → 26 base32 characters (the first carries 3 bits).
	var out [26]byte
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// parseULID is ulid's inverse; ok is false for a string it never made.
func parseULID(s string) (ms int64, rest [10]byte, ok bool) {
	if len(s) != 26 || strings.IndexByte(crockford[:8], s[0]) < 0 {
		return 0, rest, false
	}
	var hi, lo uint64
	for i := range len(s) {
		v := strings.IndexByte(crockford, s[i])
		if v < 0 {
			return 0, rest, false
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(v)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	copy(rest[:], b[6:])
	return int64(binary.BigEndian.Uint64(b[:8]) >> 16), rest, true
}

// A webhook delivery's id is made from what the delivery is, one event's
// delivery to one endpoint, so that nothing but its key needs storing or
// indexing (migration 0017): the event's time, its seq (48 bits) and a
// 32-bit tag of the endpoint's id. It sorts by time like every other id,
// is unique, and a client never parses it (SPEC §1); the store finds the
// delivery from it and the endpoint of the route it came by.
func deliveryID(createdMS, seq int64, endpointID string) string {
	var rest [10]byte
	binary.BigEndian.PutUint64(rest[:8], uint64(seq)<<16)
	tag := sha256.Sum256([]byte(endpointID))
	copy(rest[6:], tag[:4])
	return "dlv_" + ulid(createdMS, rest)
}

// parseDeliveryID returns the seq of a delivery id deliveryID made for
// endpointID; ok is false for any other string (an id from before
// migration 0017, stored as legacy_id, or garbage).
func parseDeliveryID(id, endpointID string) (seq int64, ok bool) {
	s, found := strings.CutPrefix(id, "dlv_")
	if !found {
		return 0, false
	}
	_, rest, ok := parseULID(s)
	tag := sha256.Sum256([]byte(endpointID))
	if !ok || [4]byte(rest[6:]) != [4]byte(tag[:4]) {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(rest[:8]) >> 16), true
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
