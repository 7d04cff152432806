package app

import "time"

// FormatTime is a time as every surface shows it (SPEC §1): RFC 3339,
// UTC, with milliseconds.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
