package api

import (
	"sync"
	"time"
)

// readCache keeps values computed from the database for as long as the
// database has not changed: each entry carries the store's DataVersion at
// which it was read, and only a lookup at that same version finds it
// (versions are compared for equality, never ordered). Any
// commit, by this process or another (the CLI), moves the version and
// retires every entry at once; nothing is invalidated by hand. It pays off
// whenever reads outnumber writes between two commits: agents and consoles
// re-reading the same threads while no mail arrives.
//
// Entries also expire after maxAge, so that what they hold that is not
// data (a page's signed next_cursor) stays fresh. The cache is bounded by
// the bytes of its values; when full, arbitrary entries make room.
type readCache[V any] struct {
	mu       sync.Mutex
	entries  map[string]cacheEntry[V]
	bytes    int
	maxBytes int
	maxAge   time.Duration
	now      func() time.Time
}

type cacheEntry[V any] struct {
	version int64
	at      time.Time
	size    int
	value   V
}

func newReadCache[V any](maxBytes int, maxAge time.Duration, now func() time.Time) *readCache[V] {
	return &readCache[V]{entries: map[string]cacheEntry[V]{}, maxBytes: maxBytes, maxAge: maxAge, now: now}
}

// get returns the value cached for key at version.
func (c *readCache[V]) get(key string, version int64) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.version != version || c.now().Sub(e.at) >= c.maxAge {
		var zero V
		return zero, false
	}
	return e.value, true
}

// put caches value (about size bytes) for key as read at version.
func (c *readCache[V]) put(key string, version int64, value V, size int) {
	size += len(key)
	if size > c.maxBytes/8 {
		return // one value must not evict most of the others
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		c.bytes -= old.size
		delete(c.entries, key)
	}
	for k, e := range c.entries { // map order: arbitrary victims
		if c.bytes+size <= c.maxBytes {
			break
		}
		c.bytes -= e.size
		delete(c.entries, k)
	}
	c.entries[key] = cacheEntry[V]{version: version, at: c.now(), size: size, value: value}
	c.bytes += size
}
