//go:build race

package spool

// raceEnabled: the race detector multiplies allocations, so memory bounds
// are not checked under it.
const raceEnabled = true
