package message

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func rep(s string, n int) string { return strings.Repeat(s, n) }

type shape struct {
	name string
	gen  func(n int) string // n = approximate target bytes
}

func exploreShapes() []shape {
	return []shape{
		{"header-lines", func(n int) string { return rep("X-A: b\n", n/7) + "\nbody\n" }},
		{"to-many-addrs", func(n int) string { return "To: " + rep("a@b.c, ", n/7) + "\n\nx\n" }},
		{"to-bad-addrs", func(n int) string { return "To: " + rep("a b <c@d> ", n/10) + "\n\nx\n" }},
		{"to-comments", func(n int) string { return "To: " + rep("(", n) + "\n\nx\n" }},
		{"to-quotes", func(n int) string { return "To: " + rep("\"a\" ", n/4) + "\n\nx\n" }},
		{"to-angles", func(n int) string { return "To: " + rep("<", n) + "\n\nx\n" }},
		{"to-at", func(n int) string { return "To: " + rep("@", n) + "\n\nx\n" }},
		{"to-ats", func(n int) string { return "To: " + rep("a@", n/2) + "\n\nx\n" }},
		{"folded-subject", func(n int) string { return "Subject: a\n" + rep(" b\n", n/3) + "\nx\n" }},
		{"subject-encwords", func(n int) string { return "Subject: " + rep("=?utf-8?q?a?= ", n/14) + "\n\nx\n" }},
		{"subject-open-encwords", func(n int) string { return "Subject: " + rep("=?", n/2) + "\n\nx\n" }},
		{"subject-q", func(n int) string { return "Subject: " + rep("=?a?Q?", n/6) + "\n\nx\n" }},
		{"date-parens", func(n int) string { return "Date: " + rep("(", n) + "\n\nx\n" }},
		{"ct-params", func(n int) string { return "Content-Type: text/plain; " + rep("a=b; ", n/6) + "\n\nx\n" }},
		{"ct-dup-params", func(n int) string { return "Content-Type: text/plain; a=1; a=2; " + rep("x=1; ", n/5) + "\n\nx\n" }},
		{"ct-rfc2231-rev", func(n int) string {
			var b strings.Builder
			b.WriteString("Content-Type: text/plain; a=1; a=2")
			k := n / 14
			for i := k; i > 0; i-- {
				fmt.Fprintf(&b, "; n*%d=x", i)
			}
			b.WriteString("\n\nx\n")
			return b.String()
		}},
		{"ct-rfc2231-ok", func(n int) string {
			var b strings.Builder
			b.WriteString("Content-Type: text/plain")
			k := n / 14
			for i := 0; i < k; i++ {
				fmt.Fprintf(&b, "; n*%d=x", i)
			}
			b.WriteString("\n\nx\n")
			return b.String()
		}},
		{"long-header-line", func(n int) string { return "X: " + rep("a", n) + "\n\nx\n" }},
		{"long-body-line", func(n int) string { return "\n" + rep("a", n) + "\n" }},
		{"long-body-line-colon", func(n int) string { return "\nOn " + rep("a ", n/2) + "wrote:\n" }},
		{"skrev-line", func(n int) string { return "\n" + rep("1 skrev ", n/8) + ":\n" }},
		{"quoted-lines", func(n int) string { return "\n" + rep(">\n", n/2) }},
		{"quoted-lines-a", func(n int) string { return "\nhi\n" + rep("> a\n", n/4) }},
		{"On-lines", func(n int) string { return "\n" + rep("On x\n", n/5) }},
		{"From-lines", func(n int) string { return "\n" + rep("From: x\n", n/8) }},
		{"underscores", func(n int) string { return "\n" + rep("____________________\n", n/21) }},
		{"qp-long-line", func(n int) string { return "Content-Transfer-Encoding: quoted-printable\n\n" + rep("a", n) }},
		{"qp-lines", func(n int) string { return "Content-Transfer-Encoding: quoted-printable\n\n" + rep("a=\n", n/3) }},
		{"b64", func(n int) string { return "Content-Transfer-Encoding: base64\n\n" + rep("QUJD", n/4) }},
		{"html-div", func(n int) string { return "Content-Type: text/html\n\n" + rep("<div>", n/5) }},
		{"html-b", func(n int) string { return "Content-Type: text/html\n\n" + rep("<b>", n/3) }},
		{"html-a", func(n int) string { return "Content-Type: text/html\n\n" + rep("<a>", n/3) }},
		{"html-p", func(n int) string { return "Content-Type: text/html\n\n" + rep("<p>", n/3) }},
		{"html-table", func(n int) string { return "Content-Type: text/html\n\n" + rep("<table>", n/7) }},
		{"html-td", func(n int) string { return "Content-Type: text/html\n\n<table><tr>" + rep("<td>", n/4) }},
		{"html-bdiv", func(n int) string { return "Content-Type: text/html\n\n" + rep("<b><div>", n/8) }},
		{"html-font", func(n int) string { return "Content-Type: text/html\n\n" + rep("<font>", n/6) }},
		{"html-ul", func(n int) string { return "Content-Type: text/html\n\n" + rep("<ul><li>", n/8) }},
		{"html-select", func(n int) string { return "Content-Type: text/html\n\n" + rep("<select><option>", n/16) }},
		{"html-attrs", func(n int) string { return "Content-Type: text/html\n\n<p " + rep("a=b ", n/4) + ">" }},
		{"html-close", func(n int) string { return "Content-Type: text/html\n\n" + rep("</p>", n/4) }},
		{"html-blockquote", func(n int) string { return "Content-Type: text/html\n\n" + rep("<blockquote>", n/12) }},
		{"html-text-lines", func(n int) string { return "Content-Type: text/html\n\n" + rep("a<br>", n/5) }},
		{"html-comment", func(n int) string { return "Content-Type: text/html\n\n" + rep("<!--", n/4) }},
		{"html-entities", func(n int) string { return "Content-Type: text/html\n\n" + rep("&amp", n/4) }},
		{"mp-parts", func(n int) string {
			return "Content-Type: multipart/mixed; boundary=b\n\n" + rep("--b\n\nx\n", n/7) + "--b--\n"
		}},
		{"mp-parts-attach", func(n int) string {
			return "Content-Type: multipart/mixed; boundary=b\n\n" + rep("--b\nContent-Type: application/x\n\nx\n", n/36) + "--b--\n"
		}},
		{"mp-parts-qp", func(n int) string {
			return "Content-Type: multipart/mixed; boundary=b\n\n" + rep("--b\nContent-Transfer-Encoding: quoted-printable\n\nx\n", n/50) + "--b--\n"
		}},
		{"mp-nested-same", func(n int) string {
			return "Content-Type: multipart/mixed; boundary=b\n\n" + rep("--b\nContent-Type: multipart/mixed; boundary=b\n\n", n/47) + "--b--\n"
		}},
		{"mp-nested-deep", func(n int) string {
			var b strings.Builder
			b.WriteString("Content-Type: multipart/mixed; boundary=b0\n\n")
			for i := 0; b.Len() < n; i++ {
				fmt.Fprintf(&b, "--b%d\nContent-Type: multipart/mixed; boundary=b%d\n\n", i, i+1)
			}
			return b.String()
		}},
		{"mp-deep-then-body", func(n int) string {
			var b strings.Builder
			b.WriteString("Content-Type: multipart/mixed; boundary=b0\n\n")
			for i := 0; i < 45; i++ {
				fmt.Fprintf(&b, "--b%d\nContent-Type: multipart/mixed; boundary=b%d\n\n", i, i+1)
			}
			b.WriteString(rep("line of text\n", n/13))
			return b.String()
		}},
		{"mp-no-boundary", func(n int) string {
			return "Content-Type: multipart/mixed; boundary=b\n\n" + rep("--c\n", n/4)
		}},
		{"mp-headers-only", func(n int) string {
			return "Content-Type: multipart/mixed; boundary=b\n\n--b\n" + rep("X-A: b\n", n/7)
		}},
		{"mp-long-boundary", func(n int) string {
			bd := rep("b", n/2)
			return "Content-Type: multipart/mixed; boundary=" + bd + "\n\n--" + bd + "\n\nx\n--" + bd + "--\n"
		}},
		{"mp-delim-lines", func(n int) string {
			return "Content-Type: multipart/mixed; boundary=b\n\n" + rep("--b\n", n/4)
		}},
		{"nul-bytes", func(n int) string { return rep("\x00", n) }},
		{"colon-lines", func(n int) string { return rep(":\n", n/2) }},
		{"cr-only", func(n int) string { return "X: a" + rep("\r", n) }},
		{"8bit", func(n int) string { return "Subject: " + rep("\xff", n) + "\n\n" + rep("\xe9", n) }},
		{"iso2022", func(n int) string { return "Content-Type: text/plain; charset=iso-2022-jp\n\n" + rep("\x1b$B", n/3) }},
		{"html-nocharset-8bit", func(n int) string { return "Content-Type: text/html\n\n" + rep("\xe9<p>", n/4) }},
	}
}

func TestZZExplore(t *testing.T) {
	for _, s := range exploreShapes() {
		var d [2]time.Duration
		for i, n := range []int{256 << 10, 1 << 20} {
			raw := []byte(s.gen(n))
			start := time.Now()
			Parse(raw)
			d[i] = time.Since(start)
		}
		flag := ""
		if d[1] > 500*time.Millisecond || d[1] > 8*d[0] {
			flag = "  <<<<<"
		}
		t.Logf("%-24s 256K %10v  1M %10v  ratio %5.1f%s", s.name, d[0].Round(time.Microsecond), d[1].Round(time.Microsecond), float64(d[1])/float64(d[0]), flag)
	}
}
