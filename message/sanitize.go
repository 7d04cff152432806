package message

import (
	"regexp"
	"sync"

	"github.com/microcosm-cc/bluemonday"
)

// policy is built once and never modified afterwards; bluemonday policies
// are safe for concurrent use once built.
var policy = sync.OnceValue(newPolicy)

// imgSrc allows only images that need no network fetch: cid: references to
// the message's own parts (rewritten to attachment URLs when served) and
// data: images. Remote images are tracking beacons more often than content,
// so they are blocked by default.
var imgSrc = regexp.MustCompile(`(?i)^\s*(cid:|data:image/)`)

// newPolicy is bluemonday's UGCPolicy without its AllowImages (whose
// src-anything rule cannot be narrowed afterwards: attribute rules are ORed),
// plus a few presentational elements that mail relies on.
func newPolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowStandardAttributes()
	p.AllowStandardURLs()
	p.AllowURLSchemes("cid")
	p.AllowDataURIImages()
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)

	p.AllowElements("article", "aside", "figure", "section", "summary", "hgroup",
		"h1", "h2", "h3", "h4", "h5", "h6", "br", "div", "hr", "p", "span", "wbr",
		"abbr", "acronym", "cite", "code", "dfn", "em", "figcaption", "mark", "s",
		"samp", "strong", "sub", "sup", "var", "b", "i", "pre", "small", "strike",
		"tt", "u", "rp", "rt", "ruby", "center", "font", "big", "address")
	p.AllowAttrs("open").Matching(regexp.MustCompile(`(?i)^(|open)$`)).OnElements("details")
	p.AllowAttrs("cite").OnElements("blockquote", "q")
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("datetime").Matching(bluemonday.ISO8601).OnElements("time", "del", "ins")
	p.AllowAttrs("cite").Matching(bluemonday.Paragraph).OnElements("del", "ins")
	p.AllowAttrs("dir").Matching(bluemonday.Direction).OnElements("bdi", "bdo")
	p.AllowLists()
	p.AllowTables()

	// Images: no src that needs a fetch (see imgSrc).
	p.AllowAttrs("src").Matching(imgSrc).OnElements("img")
	p.AllowAttrs("alt").Matching(bluemonday.Paragraph).OnElements("img")
	p.AllowAttrs("height", "width").Matching(bluemonday.NumberOrPercent).OnElements("img")
	p.AllowAttrs("align").Matching(bluemonday.ImageAlign).OnElements("img")

	p.AllowAttrs("align").Matching(bluemonday.CellAlign).OnElements("p", "div", "center")
	p.AllowAttrs("bgcolor", "color").Matching(regexp.MustCompile(`^#?[0-9A-Za-z]{1,20}$`)).OnElements("td", "th", "tr", "table", "font")

	// The title of a full HTML document is not part of the visible body.
	p.SkipElementsContent("title")
	return p
}

// Sanitize returns html made safe with the package's bluemonday policy: no
// scripts, event handlers, forms, frames, styles or javascript: URLs; remote
// images removed; cid: and data: images kept; links get rel="nofollow
// noopener" and target="_blank".
func Sanitize(html string) string {
	return policy().Sanitize(html)
}
