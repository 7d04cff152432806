package corpus

import (
	"sync"
	"time"
)

// Clock is the injectable clock of the tests: they move time, nothing
// sleeps. Its Now is what a package's Now option takes.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock that reads t until it is advanced.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's reading.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
