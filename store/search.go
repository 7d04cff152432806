package store

import (
	"strings"
	"unicode"
)

// searchText prepares text for the FTS5 unicode61 tokenizer. unicode61
// splits on spaces and punctuation only, so unspaced Chinese or Japanese
// text would be one giant token; every CJK character is made a token of its
// own, and a query for "東京" becomes the phrase "東 京" (SPEC §5.5).
func searchText(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	prevCJK := false
	for _, r := range s {
		cjk := isCJK(r)
		if cjk || prevCJK {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prevCJK = cjk
	}
	return b.String()
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}
