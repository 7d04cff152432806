package message

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// RFC 2047 §2: an encoded-word is at most 75 characters, and a header
// line holding one at most 76.
const (
	maxLine      = 998 // RFC 5322 §2.1.1, any header line
	maxWord      = 75
	maxWordLine  = 76
	wordOverhead = len("=?utf-8?q?") + len("?=")
	minFirstWord = wordOverhead + 4 // room for a character or two after a long name
)

// upperHex spells bytes in Q's =XX and RFC 2231's %XX.
const upperHex = "0123456789ABCDEF"

// needsWords reports whether the unstructured value (Subject, X-*) of
// field name has to be written as encoded-words: it goes beyond ASCII,
// holds text a reader would take for an encoded-word and decode (RFC
// 2047 §5 (1)), or has a run without white space too long for one line
// (RFC 5322 §2.1.1's 998), which plain folding could only break by
// adding a space, where encoded-words fold without changing the text.
func needsWords(name, value string) bool {
	if !readsAsWritten(value) {
		return true
	}
	room := maxLine - len(name) - len(": ")
	for _, run := range strings.FieldsFunc(value, func(r rune) bool { return r == ' ' || r == '\t' }) {
		if len(run) > room {
			return true
		}
	}
	return false
}

// wordsField is "name: value" as a header field ready to write, CRLF
// included: value as UTF-8 encoded-words (Q, or B when most of it is
// beyond ASCII and B is the shorter), each holding whole characters,
// folded between words so that no line is longer than 76 characters.
// Readers drop the folding between encoded-words, so the value reads back
// exactly.
func wordsField(name, value string) []byte {
	// A name too long to leave room on its line still gets its first word
	// there: a value starting on the next line reads with a leading space.
	first := max(maxWordLine-len(name)-len(": "), minFirstWord)
	b := []byte(name + ":")
	for i, w := range encodeWords(value, first, mostlyBeyondASCII(value)) {
		if i > 0 {
			b = append(b, "\r\n"...)
		}
		b = append(append(b, ' '), w...)
	}
	return append(b, "\r\n"...)
}

// mostlyBeyondASCII reports whether B encodes value shorter than Q: Q
// spends 3 characters on each byte beyond ASCII, B 4 on every 3 bytes.
func mostlyBeyondASCII(value string) bool {
	n := 0
	for i := range len(value) {
		if value[i] >= utf8.RuneSelf {
			n++
		}
	}
	return n*3 > len(value)
}

// encodeWords splits value into encoded-words, in B when b64 and in Q
// otherwise, the first at most first characters long and the rest at
// most maxWord.
func encodeWords(value string, first int, b64 bool) []string {
	var words []string
	var piece []byte // the text of the word being filled
	qLen, limit := 0, first
	for _, r := range value {
		var rb [utf8.UTFMax]byte
		next := rb[:utf8.EncodeRune(rb[:], r)]
		grow := 0
		for _, c := range next {
			grow += qWidth(c)
		}
		fits := wordOverhead+qLen+grow <= limit
		if b64 {
			fits = wordOverhead+base64.StdEncoding.EncodedLen(len(piece)+len(next)) <= limit
		}
		if !fits && len(piece) > 0 {
			words = append(words, encodeWord(piece, b64))
			piece, qLen, limit = piece[:0], 0, maxWord
		}
		piece = append(piece, next...)
		qLen += grow
	}
	return append(words, encodeWord(piece, b64))
}

// encodeWord is text as one UTF-8 encoded-word, in B or Q.
func encodeWord(text []byte, b64 bool) string {
	if b64 {
		return "=?utf-8?b?" + base64.StdEncoding.EncodeToString(text) + "?="
	}
	w := []byte("=?utf-8?q?")
	for _, c := range text {
		switch {
		case c == ' ':
			w = append(w, '_')
		case qPlain(c):
			w = append(w, c)
		default:
			w = append(w, '=', upperHex[c>>4], upperHex[c&15])
		}
	}
	return string(append(w, "?="...))
}

// qPlain reports whether RFC 2047's Q encoding leaves c as it is in
// unstructured text (§4.2, §5 (1)): printable ASCII but "=", "?" and "_".
func qPlain(c byte) bool { return c > ' ' && c <= '~' && c != '=' && c != '?' && c != '_' }

// qWidth is how many characters c takes in Q.
func qWidth(c byte) int {
	if c == ' ' || qPlain(c) {
		return 1
	}
	return 3
}
