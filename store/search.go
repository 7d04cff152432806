package store

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// searchText prepares text for the FTS5 unicode61 tokenizer. unicode61
// splits on spaces and punctuation only, so unspaced Chinese or Japanese
// text would be one giant token; every CJK character is made a token of its
// own, and a query for "東京" becomes the phrase "東 京" (SPEC §5.5).
func searchText(s string) string {
	first := firstCJK(s)
	if first < 0 {
		return s // most mail: nothing to split, nothing to copy
	}
	// The text between the inserted spaces is copied in runs: copied
	// rune by rune, a 30 KB text with a few CJK words cost 400 µs.
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	last, prevCJK := 0, false
	for i := first; i < len(s); {
		if s[i] < 0xE1 && !prevCJK {
			i++ // not a CJK lead byte, and no space owed after one
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		cjk := isCJK(r)
		if cjk || prevCJK {
			b.WriteString(s[last:i])
			b.WriteByte(' ')
			last = i
		}
		prevCJK = cjk
		i += size
	}
	b.WriteString(s[last:])
	return b.String()
}

// firstCJK is strings.IndexFunc(s, isCJK) without decoding every rune:
// the scripts start at U+1100, whose UTF-8 lead bytes are 0xE1 and above.
func firstCJK(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < 0xE1 {
			continue
		}
		if r, _ := utf8.DecodeRuneInString(s[i:]); isCJK(r) {
			return i
		}
	}
	return -1
}

func isCJK(r rune) bool {
	switch {
	case r < 0x1100: // below Hangul Jamo, the first of these scripts
		return false
	case 0x4E00 <= r && r <= 0x9FFF, 0xAC00 <= r && r <= 0xD7A3, 0x3041 <= r && r <= 0x3096, 0x30A1 <= r && r <= 0x30FA:
		// CJK Unified Ideographs, Hangul syllables, kana: nearly every
		// CJK character, without a table search.
		return true
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// ErrBadQuery is returned by ParseQuery for text that is not a valid
// search (unbalanced quotes).
var ErrBadQuery = errors.New("search has an unbalanced double quote")

// ErrQueryNotUTF8 is returned by ParseQuery for text that is not UTF-8:
// everything indexed is, so such a search could only find nothing, or
// find it by accident.
var ErrQueryNotUTF8 = errors.New("search is not valid UTF-8")

// Query is a parsed search (SPEC §5.5). The zero Query matches everything.
type Query struct {
	match string // FTS5 MATCH expression; "" = no search
	raw   string
}

// Empty reports whether the query filters nothing.
func (q Query) Empty() bool { return q.match == "" }

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
		t := `"` + strings.ReplaceAll(strings.TrimSpace(searchText(term)), `"`, `""`) + `"`
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
	return Query{match: strings.Join(terms, " AND "), raw: text}, nil
}
