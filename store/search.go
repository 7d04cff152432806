package store

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/inboxd/inboxd/message"
)

// ErrBadQuery is returned by ParseQuery for text that is not a valid
// search (unbalanced quotes).
var ErrBadQuery = errors.New("search has an unbalanced double quote")

// ErrQueryNotUTF8 is returned by ParseQuery for text that is not UTF-8:
// everything indexed is, so such a search could only find nothing, or
// find it by accident.
var ErrQueryNotUTF8 = errors.New("search is not valid UTF-8")

// Query is a parsed search (SPEC §5.5). The zero Query matches everything.
type Query struct {
	match string // FTS5 MATCH expression; "" = no search, unless none
	// none marks a search for text without a letter or digit ("!!!",
	// "*"): nothing indexed can match it, and dropping it would answer
	// everything instead.
	none bool
	raw  string
}

// words is the query's words under a column filter: they match the
// message's text, never the tokens of its scope column.
func (q Query) words() string { return `{subject addresses body} : (` + q.match + `)` }

// inInbox is the MATCH expression of the query's matches in one inbox,
// with direction ("inbound", "outbound" or "" for both).
func (q Query) inInbox(inboxID, direction string) string {
	scope := `"` + scopeToken(inboxID) + `"`
	if direction != "" {
		scope += ` AND "` + strings.ReplaceAll(direction, `"`, `""`) + `"`
	}
	return `{scope} : (` + scope + `) AND ` + q.words()
}

// Empty reports whether the query filters nothing.
func (q Query) Empty() bool { return q.match == "" && !q.none }

// String returns the text the query was parsed from.
func (q Query) String() string { return q.raw }

// ParseQuery turns user text into an FTS5 expression without ever passing
// the user's syntax to the database: words are ANDed, "double quotes" make
// a phrase, a trailing * makes a prefix, and every other character is
// literal text (each term becomes a quoted FTS5 string).
func ParseQuery(text string) (Query, error) {
	if !utf8.ValidString(text) {
		return Query{}, ErrQueryNotUTF8
	}
	if strings.Count(text, `"`)%2 != 0 {
		return Query{}, ErrBadQuery
	}
	var terms []string
	add := func(term string, phrase bool) {
		prefix := false
		if !phrase && strings.HasSuffix(term, "*") {
			term, prefix = strings.TrimRight(term, "*"), true
		}
		if !strings.ContainsFunc(term, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) {
			return // nothing the tokenizer would index
		}
		// SQLite ends an FTS5 string at a NUL; the tokenizer separates
		// words there, so a space searches the same.
		term = strings.ReplaceAll(term, "\x00", " ")
		t := `"` + strings.ReplaceAll(strings.TrimSpace(message.SearchText(term)), `"`, `""`) + `"`
		if prefix {
			t += "*"
		}
		terms = append(terms, t)
	}
	for i, part := range strings.Split(text, `"`) {
		if i%2 == 1 {
			add(part, true)
			continue
		}
		for _, w := range strings.Fields(part) {
			add(w, false)
		}
	}
	none := len(terms) == 0 && strings.TrimSpace(text) != ""
	return Query{match: strings.Join(terms, " AND "), none: none, raw: text}, nil
}
