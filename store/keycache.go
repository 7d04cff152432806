package store

import (
	"context"
	"crypto/sha256"
	"sync"
)

// TokenHash is the SHA-256 of an API key's token, the only form of it the
// store keeps. A transport that must check a key again later (an SMTP
// session, at every transaction) keeps this, never the token or the Key.
type TokenHash [sha256.Size]byte

// HashToken returns the hash of a bearer token.
func HashToken(token string) TokenHash { return sha256.Sum256([]byte(token)) }

// Authenticate returns the key whose token hashes to h (ErrNotFound for an
// unknown or revoked one) and the DataVersion it was checked at, so the
// caller may serve other values read at that version from its own caches.
// Every transport authenticates here, through one cache: a key found stays
// cached only while the version holds, so a revocation by any process (the
// API, the CLI) applies to the very next check.
func (db *DB) Authenticate(ctx context.Context, h TokenHash) (Key, int64, error) {
	version, err := db.DataVersion(ctx)
	if err != nil {
		return Key{}, 0, err
	}
	if k, ok := db.keys.get(h, version); ok {
		return k, version, nil
	}
	k, err := db.keyByHash(ctx, h[:])
	if err != nil {
		return Key{}, 0, err
	}
	db.keys.put(h, version, k)
	return k, version, nil
}

// maxCachedKeys bounds the key cache; only keys that exist are cached, so
// guessed tokens cannot fill it.
const maxCachedKeys = 4096

// keyCache holds the keys found at one DataVersion. Every key read at a
// version is right for as long as the version holds (versions are compared
// for equality, never ordered), so a lookup at another version empties the
// cache instead of checking entries one by one.
type keyCache struct {
	mu      sync.Mutex
	version int64
	keys    map[TokenHash]Key
}

func (c *keyCache) get(h TokenHash, version int64) (Key, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version {
		c.version, c.keys = version, nil
		return Key{}, false
	}
	k, ok := c.keys[h]
	return k, ok
}

// put caches k as read at version, unless the cache has moved to another
// version meanwhile.
func (c *keyCache) put(h TokenHash, version int64, k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version != c.version {
		return
	}
	if c.keys == nil || len(c.keys) >= maxCachedKeys {
		c.keys = map[TokenHash]Key{}
	}
	c.keys[h] = k
}
