package store

// TimeKey is a keyset position in a list ordered by a time, then by id
// (newest first, or oldest first for the lists of a project's inboxes,
// keys and webhook endpoints).
type TimeKey struct {
	At int64  `json:"a"` // unix ms
	ID string `json:"i"`
}

// createdPage ends the query of a list ordered oldest first by created_at,
// then id: at most limit rows (−1: every one) strictly after the position
// after (from the first when nil). It returns the SQL to append and the
// query's arguments args followed by the page's.
func createdPage(after *TimeKey, limit int, args ...any) (string, []any) {
	tail := ` ORDER BY created_at, id LIMIT ?`
	if after != nil {
		tail = ` AND (created_at, id) > (?, ?)` + tail
		args = append(args, after.At, after.ID)
	}
	return tail, append(args, limit)
}
