package message

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SearchText prepares text for the FTS5 unicode61 tokenizer. unicode61
// splits on spaces and punctuation only, so unspaced Chinese or Japanese
// text would be one giant token; every CJK character is made a token of its
// own, and a query for "東京" becomes the phrase "東 京" (SPEC §5.5).
func SearchText(s string) string {
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
