package message

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSearchText(t *testing.T) {
	for in, want := range map[string]string{
		"hello world":   "hello world",
		"東京で会議":         " 東 京 で 会 議",
		"meet in 東京 ok": "meet in  東 京  ok",
	} {
		if got := SearchText(in); got != want {
			t.Errorf("SearchText(%q) = %q, want %q", in, got, want)
		}
	}
}

// searchTextByRune is SearchText's definition, written plainly: a space
// before every CJK rune and before the first rune after one; every byte,
// valid UTF-8 or not, kept.
func searchTextByRune(s string) string {
	var b strings.Builder
	prevCJK := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		cjk := isCJK(r)
		if cjk || prevCJK {
			b.WriteByte(' ')
		}
		b.WriteString(s[i : i+size])
		prevCJK = cjk
		i += size
	}
	return b.String()
}

// FuzzSearchText holds SearchText's run-copying loop to its definition.
func FuzzSearchText(f *testing.F) {
	for _, s := range []string{"hello world", "東京で会議", "meet in 東京 ok", "Grüße, 山田太郎 — プロジェクト締め切り!",
		"한국어 텍스트", "ᄀa", "é東", "東\r\n", "x会", "東\xffa", "\xe6\x9d東"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := SearchText(s), searchTextByRune(s); got != want {
			t.Fatalf("SearchText(%q) = %q, want %q", s, got, want)
		}
	})
}

// isCJK's fast paths agree with the Unicode tables, for every rune.
func TestIsCJKFastPath(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got, want := isCJK(r), unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul); got != want {
			t.Fatalf("isCJK(%U) = %v, the Unicode tables say %v", r, got, want)
		}
	}
}

// firstCJK finds what strings.IndexFunc(s, isCJK) finds.
func TestFirstCJK(t *testing.T) {
	for _, s := range []string{"", "plain ascii", "Grüße aus Köln", "meet in 東京 ok", "ᄀ jamo", "\xe1\x84", "日本", "x\xffy 한국어", "Ελληνικά и русский"} {
		if got, want := firstCJK(s), strings.IndexFunc(s, isCJK); got != want {
			t.Errorf("firstCJK(%q) = %d, want %d", s, got, want)
		}
	}
}

// BenchmarkSearchText prepares a 30 KB text in a few scripts, like the
// bodies bench/smtpload sends at 64 KB.
func BenchmarkSearchText(b *testing.B) {
	text := benchText(30 << 10)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		SearchText(text)
	}
}

// benchText returns about n bytes of mail text in a few scripts, in lines,
// like the bodies bench/smtpload sends.
func benchText(n int) string {
	var text strings.Builder
	words := strings.Fields("the meeting invoice order delivery report Rechnung Lieferung привет счёт 会議 請求書 budget quarterly")
	for i := 0; text.Len() < n; i++ {
		fmt.Fprintf(&text, "%s ref%d", words[i%len(words)], i*7919%100000)
		if i%11 == 10 {
			text.WriteString("\r\n")
		}
	}
	return text.String()
}
