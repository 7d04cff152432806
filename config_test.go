package main

import (
	"io"
	"testing"
	"time"
)

// --retention and --event-retention take days as they are usually said
// (SPEC §13: "30d") besides Go's durations; anything else is refused.
func TestRetentionFlagsTakeDays(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * 24 * time.Hour, true},
		{"1d", 24 * time.Hour, true},
		{"12h", 12 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"0", 0, true},
		{"1.5d", 0, false},
		{"-1d", 0, false},
		{"-1h", 0, false},
		{"d", 0, false},
		{"week", 0, false},
	} {
		for _, flag := range []string{"--retention", "--event-retention"} {
			c, _, err := serveConfig([]string{flag, tc.arg}, func(string) string { return "" }, io.Discard)
			got := c.Retention
			if flag == "--event-retention" {
				got = c.EventRetention
			}
			if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
				t.Errorf("%s %s: %v, %v; want %v (ok %v)", flag, tc.arg, got, err, tc.want, tc.ok)
			}
		}
	}
	c, _, err := serveConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil || c.EventRetention != 30*24*time.Hour || c.Retention != 0 {
		t.Errorf("defaults: event retention %v, retention %v, %v", c.EventRetention, c.Retention, err)
	}
}
