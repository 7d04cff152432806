// The race detector's shadow memory makes allocation cost step with size,
// which a timing-ratio test cannot tell from a slope.

//go:build !race

package message

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// hostileShapes build messages of about n bytes that stress one path of the
// parser each: header unfolding, parameter continuations, address
// fallbacks, boundary scanning, nesting, transfer decoding, reply extraction
// and HTML handling.
var hostileShapes = []struct {
	name string
	make func(n int) string
}{
	{"header fields", func(n int) string { return strings.Repeat("X-A: b\n", n/7) + "\nbody\n" }},
	{"folded subject", func(n int) string { return "Subject: a\n" + strings.Repeat(" b\n", n/3) + "\nx\n" }},
	{"one long header line", func(n int) string { return "X: " + strings.Repeat("a", n) + "\n\nx\n" }},
	{"unparseable addresses", func(n int) string { return "To: " + strings.Repeat("a b <c@d> ", n/10) + "\n\nx\n" }},
	{"encoded words", func(n int) string { return "Subject: " + strings.Repeat("=?utf-8?q?a?= ", n/14) + "\n\nx\n" }},
	{"RFC 2231 continuations in reverse", func(n int) string {
		// The duplicate parameter makes mime.ParseMediaType fail, so the
		// lenient parser has to order the pieces itself.
		var b strings.Builder
		b.WriteString("Content-Type: text/plain; a=1; a=2")
		for i := n / 14; i > 0; i-- {
			fmt.Fprintf(&b, "; n*%d=x", i)
		}
		b.WriteString("\n\nx\n")
		return b.String()
	}},
	{"quoted lines", func(n int) string { return "\nhi\n" + strings.Repeat("> a\n", n/4) }},
	{"Outlook From lines", func(n int) string { return "\n" + strings.Repeat("From: x\n", n/8) }},
	{"attribution starts", func(n int) string { return "\n" + strings.Repeat("On x\n", n/5) }},
	{"one long body line", func(n int) string { return "\nOn " + strings.Repeat("a ", n/2) + "wrote:\n" }},
	{"quoted-printable one line", func(n int) string {
		return "Content-Transfer-Encoding: quoted-printable\n\n" + strings.Repeat("a", n)
	}},
	{"base64", func(n int) string { return "Content-Transfer-Encoding: base64\n\n" + strings.Repeat("QUJD", n/4) }},
	{"many parts", func(n int) string {
		return "Content-Type: multipart/mixed; boundary=b\n\n" + strings.Repeat("--b\nContent-Type: application/x\n\nx\n", n/36) + "--b--\n"
	}},
	{"only delimiters", func(n int) string {
		return "Content-Type: multipart/mixed; boundary=b\n\n" + strings.Repeat("--b\n", n/4)
	}},
	{"nested multiparts", func(n int) string {
		var b strings.Builder
		b.WriteString("Content-Type: multipart/mixed; boundary=b0\n\n")
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "--b%d\nContent-Type: multipart/mixed; boundary=b%d\n\n", i, i+1)
		}
		return b.String()
	}},
	{"boundary never found", func(n int) string {
		return "Content-Type: multipart/mixed; boundary=b\n\n" + strings.Repeat("--c\n", n/4)
	}},
	{"nested divs", func(n int) string { return "Content-Type: text/html\n\n" + strings.Repeat("<div>", n/5) }},
	{"nested links", func(n int) string { return "Content-Type: text/html\n\n" + strings.Repeat("<a>", n/3) }},
	{"table cells", func(n int) string { return "Content-Type: text/html\n\n<table><tr>" + strings.Repeat("<td>", n/4) }},
	{"blockquotes", func(n int) string { return "Content-Type: text/html\n\n" + strings.Repeat("<blockquote>", n/12) }},
	{"html lines", func(n int) string { return "Content-Type: text/html\n\n" + strings.Repeat("a<br>", n/5) }},
}

// TestParseIsLinear: Parse must take time linear in the input for every
// shape of input, so a hostile message cannot stall ingestion (a 1 MiB
// header of reversed RFC 2231 continuations once took 6 s). Timing is noisy,
// and noise only ever adds time, so each size is timed several times and
// the fastest run counts; the collector runs between runs instead of
// during them, because whether a run crosses the heap target depends on its
// size and shows up as a step, not a slope. Quadrupling the input must cost
// less than 10x the time; a quadratic path costs ~16x.
func TestParseIsLinear(t *testing.T) {
	// A timing check, not a target: it runs on demand (after changing the
	// parser), never in CI where a noisy neighbour could fail it.
	if os.Getenv("INBOXD_LINEARITY") == "" {
		t.Skip("timing check: run with INBOXD_LINEARITY=1 go test ./message -run Linear")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n, factor, maxRatio = 32 << 10, 4, 10.0
	fastest := func(raw []byte) time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 5 {
			runtime.GC()
			start := time.Now()
			Parse(raw)
			best = min(best, time.Since(start))
		}
		// Below 100µs, timer and scheduling granularity swamp the signal.
		return max(best, 100*time.Microsecond)
	}
	for _, shape := range hostileShapes {
		small, large := []byte(shape.make(n)), []byte(shape.make(factor*n))
		ts, tl := fastest(small), fastest(large)
		if ratio := float64(tl) / float64(ts); ratio >= maxRatio {
			t.Errorf("%s: %d bytes took %v, %d bytes took %v (%.1fx for %dx the input)",
				shape.name, len(small), ts, len(large), tl, ratio, factor)
		}
	}
}
