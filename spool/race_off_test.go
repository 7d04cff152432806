//go:build !race

package spool

const raceEnabled = false
