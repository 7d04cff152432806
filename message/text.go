package message

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

const previewRunes = 240

// Preview returns the first 240 characters (runes) of s with all whitespace
// runs collapsed to one space and trimmed.
func Preview(s string) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range s {
		if isPreviewSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			if n+1 >= previewRunes {
				break
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		if r == utf8.RuneError {
			r = '\uFFFD'
		}
		b.WriteRune(r)
		n++
		if n >= previewRunes {
			break
		}
	}
	return b.String()
}

func isPreviewSpace(r rune) bool {
	if unicode.IsSpace(r) {
		return true
	}
	switch r {
	case '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u034f', '\u00ad', '\u180e':
		// QUIRK: newsletters pad their hidden "preheader" with zero-width
		// characters so that clients show no body text in the inbox list.
		return true
	}
	return unicode.IsControl(r)
}

// HTMLToText extracts readable text from (sanitized) HTML: no markup, block
// elements become line breaks, entities decoded, script and style dropped.
func HTMLToText(s string) string {
	return htmlToText(s, false)
}

// blockElements start and end on their own line.
var blockElements = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Caption: true, atom.Center: true, atom.Dd: true, atom.Details: true,
	atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true,
	atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.Form: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true,
	atom.H6: true, atom.Header: true, atom.Hr: true, atom.Li: true, atom.Main: true,
	atom.Nav: true, atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true,
	atom.Summary: true, atom.Table: true, atom.Tbody: true, atom.Thead: true,
	atom.Tfoot: true, atom.Tr: true, atom.Ul: true,
}

// skipElements have no readable content.
var skipElements = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Head: true, atom.Title: true,
	atom.Noscript: true, atom.Template: true, atom.Iframe: true, atom.Object: true,
	atom.Svg: true, atom.Math: true, atom.Select: true, atom.Button: true,
}

// maxHTMLDepth bounds recursion over the parsed tree; x/net/html already
// caps nesting at 512, but the walk is recursive.
const maxHTMLDepth = 512

// htmlToText renders HTML as plain text. With dropQuotes it also leaves out
// quoted history that mail clients mark up: <blockquote>, Gmail's
// gmail_quote, Yahoo's yahoo_quoted, Outlook's divRplyFwdMsg and everything
// after it, and Apple Mail's type=cite.
func htmlToText(s string, dropQuotes bool) string {
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		return ""
	}
	w := &textWriter{dropQuotes: dropQuotes}
	w.walk(doc, 0)
	return w.result()
}

type textWriter struct {
	b          strings.Builder
	dropQuotes bool
	pre        int
	stop       bool // Outlook's reply header was seen: the rest is history
	newlines   int  // newlines at the end of b
	space      bool // a collapsed space is pending
}

func (w *textWriter) walk(n *html.Node, depth int) {
	if w.stop || depth > maxHTMLDepth {
		return
	}
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.CommentNode, html.DoctypeNode:
		return
	case html.ElementNode:
		if skipElements[n.DataAtom] {
			return
		}
		if w.dropQuotes && isQuoteNode(n) {
			if isOutlookReplyHeader(n) {
				w.stop = true
			}
			return
		}
		switch n.DataAtom {
		case atom.Br:
			w.newline(1)
			return
		case atom.Td, atom.Th:
			if n.PrevSibling != nil {
				w.space = true
			}
		case atom.Img:
			if alt := attr(n, "alt"); strings.TrimSpace(alt) != "" {
				w.text(alt)
			}
			return
		}
	}
	block := n.Type == html.ElementNode && blockElements[n.DataAtom]
	para := n.Type == html.ElementNode && (n.DataAtom == atom.P || n.DataAtom == atom.Blockquote ||
		n.DataAtom == atom.Table || n.DataAtom == atom.Ul || n.DataAtom == atom.Ol ||
		isHeading(n.DataAtom))
	if block {
		if para {
			w.newline(2)
		} else {
			w.newline(1)
		}
	}
	if n.DataAtom == atom.Pre {
		w.pre++
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c, depth+1)
	}
	if n.DataAtom == atom.Pre {
		w.pre--
	}
	if block {
		if para {
			w.newline(2)
		} else {
			w.newline(1)
		}
	}
}

func isHeading(a atom.Atom) bool {
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return true
	}
	return false
}

func (w *textWriter) text(s string) {
	if w.pre > 0 {
		if w.space && w.b.Len() > 0 && w.newlines == 0 {
			w.b.WriteByte(' ')
		}
		w.space = false
		w.b.WriteString(s)
		w.newlines = 0
		if strings.HasSuffix(s, "\n") {
			w.newlines = 1
		}
		return
	}
	for _, r := range s {
		if unicode.IsSpace(r) && r != '\u00a0' {
			w.space = true
			continue
		}
		if w.space && w.b.Len() > 0 && w.newlines == 0 {
			w.b.WriteByte(' ')
		}
		w.space = false
		w.b.WriteRune(r)
		w.newlines = 0
	}
}

func (w *textWriter) newline(max int) {
	w.space = false
	if w.b.Len() == 0 {
		return
	}
	for w.newlines < max {
		w.b.WriteByte('\n')
		w.newlines++
	}
}

func (w *textWriter) result() string {
	lines := strings.Split(w.b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(strings.ReplaceAll(l, "\u00a0", " "), " \t")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// isQuoteNode recognizes the markup mail clients put around quoted history.
func isQuoteNode(n *html.Node) bool {
	if n.DataAtom == atom.Blockquote {
		return true
	}
	class := " " + strings.ToLower(attr(n, "class")) + " "
	id := strings.ToLower(attr(n, "id"))
	switch {
	case strings.Contains(class, " gmail_quote "), strings.Contains(class, " gmail_quote_container "),
		strings.Contains(class, " yahoo_quoted "), strings.Contains(class, " moz-cite-prefix "),
		strings.Contains(class, " protonmail_quote "), strings.Contains(class, " zmail_extra "):
		return true
	case id == "divrplyfwdmsg", id == "appendonsend", id == "mail-editor-reference-message-container":
		return true
	case strings.EqualFold(attr(n, "type"), "cite"):
		return true
	}
	return false
}

// isOutlookReplyHeader: Outlook puts its From/Sent/To block in a div, and the
// quoted message follows as siblings rather than children, so everything
// after the marker is history.
func isOutlookReplyHeader(n *html.Node) bool {
	id := strings.ToLower(attr(n, "id"))
	return id == "divrplyfwdmsg" || id == "appendonsend" || id == "mail-editor-reference-message-container"
}
