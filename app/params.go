package app

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/inboxd/inboxd/store"
)

// The parameters several operations share, given as text and checked
// here, after the operation's scope and grant checks.

// searchQuery parses q (SPEC §5.5).
func searchQuery(q string) (store.Query, error) {
	query, err := store.ParseQuery(q)
	switch {
	case errors.Is(err, store.ErrQueryNotUTF8):
		return store.Query{}, Invalidf("q", "q must be UTF-8 text.")
	case err != nil:
		return store.Query{}, Invalidf("q", "q has an unbalanced double quote.")
	}
	return query, nil
}

// waitOf is a long-poll's wait: whole seconds from 0 to 60, 0 when none
// is given.
func waitOf(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	n, ok := decimal(v)
	if !ok || n > int64(maxWait/time.Second) {
		return 0, Invalidf("wait", "wait must be an integer number of seconds from 0 to 60.")
	}
	return time.Duration(n) * time.Second, nil
}

// nonNegative is the integer parameter name, 0 when none is given.
func nonNegative(name, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, ok := decimal(v)
	if !ok {
		return 0, Invalidf(name, "%s must be a non-negative integer.", name)
	}
	return n, nil
}

// decimal is v as a parameter's integer: decimal digits only, so "+5",
// " 5" and "5.0" are not one (strconv would take the sign).
func decimal(v string) (int64, bool) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}
