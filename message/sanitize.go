package message

import (
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/microcosm-cc/bluemonday"
)

// policy is built once and never modified afterwards; bluemonday policies
// are safe for concurrent use once built.
var policy = sync.OnceValue(func() *bluemonday.Policy { return newPolicy(nil) })

var (
	// imgSrc allows only images that need no network fetch: cid:
	// references to the message's own parts (rewritten to attachment URLs
	// when served) and data: images in raster formats (an SVG can carry
	// script). Remote images are tracking beacons more often than content,
	// so they are blocked by default.
	imgSrc = regexp.MustCompile(`(?i)^\s*(?:cid:|data:image/(?:gif|jpeg|png|webp);base64,)`)
	// linkURL is a link or citation to a scheme of AllowStandardURLs, a
	// cid: part, or a relative URL: the policy allows data: URLs for
	// images, and that scheme check alone would let them through here too.
	linkURL = regexp.MustCompile(`(?i)^\s*(?:(?:https?|mailto|cid):|[^:]*(?:[/?#]|$))`)

	// AllowStandardAttributes' patterns, compiled once here rather than on
	// each call (see SanitizeTo).
	langValue = regexp.MustCompile(`[a-zA-Z]{2,20}`)
	idValue   = regexp.MustCompile(`[a-zA-Z0-9\:\-_\.]+`)

	openValue = regexp.MustCompile(`(?i)^(|open)$`)
	colorName = regexp.MustCompile(`^#?[0-9A-Za-z]{1,20}$`)
)

// newPolicy is bluemonday's UGCPolicy without its AllowImages (whose
// src-anything rule cannot be narrowed afterwards: attribute rules are ORed),
// plus a few presentational elements that mail relies on. rewriteSrc, when
// not nil, rewrites each img src the policy has accepted.
func newPolicy(rewriteSrc func(*url.URL)) *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	// bluemonday's AllowStandardAttributes.
	p.AllowAttrs("dir").Matching(bluemonday.Direction).Globally()
	p.AllowAttrs("lang").Matching(langValue).Globally()
	p.AllowAttrs("id").Matching(idValue).Globally()
	p.AllowAttrs("title").Matching(bluemonday.Paragraph).Globally()
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
	p.AllowAttrs("open").Matching(openValue).OnElements("details")
	p.AllowAttrs("cite").Matching(linkURL).OnElements("blockquote", "q")
	p.AllowAttrs("href").Matching(linkURL).OnElements("a")
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
	p.AllowAttrs("bgcolor", "color").Matching(colorName).OnElements("td", "th", "tr", "table", "font")

	// The title of a full HTML document is not part of the visible body.
	p.SkipElementsContent("title")
	if rewriteSrc != nil {
		p.RewriteSrc(rewriteSrc)
	}
	return p
}

// Sanitize returns html made safe with the package's bluemonday policy: no
// scripts, event handlers, forms, frames, styles or javascript: URLs; remote
// images removed; cid: and data: images kept; links get rel="nofollow
// noopener" and target="_blank".
func Sanitize(html string) string {
	// bluemonday's own Sanitize writes into a bytes.Buffer grown by
	// doubling and then copies it out as a string: three times the
	// output's size in allocations. Sanitized mail is about as long as
	// its input, so a builder of that size mostly never grows.
	if strings.TrimSpace(html) == "" {
		return html // as policy().Sanitize answers
	}
	var b strings.Builder
	b.Grow(len(html) + len(html)/16)
	if err := policy().SanitizeReaderToWriter(strings.NewReader(html), &b); err != nil {
		return "" // as policy().Sanitize answers
	}
	return b.String()
}

// SanitizeTo writes html made safe as Sanitize makes it to w, token by
// token: it holds one token at a time, so its memory is a few times the
// longest run of text between two tags, not the document.
//
// cid, when not nil, gives the URL at which the message's part with a
// Content-ID is served, or false when it is not (unknown, or not clean):
// an img src the policy accepted as cid:ID (ID raw or %-decoded, RFC 2392)
// becomes that URL inside the sanitizer, which then writes the attribute
// itself. The output is always the sanitizer's: editing HTML after it
// (a string replace of "cid:"+ID) let a Content-ID with a quote in it
// close the attribute (issue 13). Other cid: URLs stay as they are; they
// fetch nothing.
func SanitizeTo(w io.Writer, html io.Reader, cid func(contentID string) (string, bool)) error {
	p := policy()
	if cid != nil {
		// A policy per call: bluemonday's rewriter has no per-call
		// argument. Building one costs some 50 µs, and only messages
		// with clean inline parts need it.
		p = newPolicy(cidRewriter(cid))
	}
	return p.SanitizeReaderToWriter(html, w)
}

// cidRewriter is the img src rewriter of SanitizeTo for cid.
func cidRewriter(cid func(contentID string) (string, bool)) func(*url.URL) {
	if cid == nil {
		return nil
	}
	return func(u *url.URL) {
		if u.Scheme != "cid" || u.Opaque == "" {
			return
		}
		target, ok := cid(u.Opaque)
		if id, err := url.PathUnescape(u.Opaque); !ok && err == nil && id != u.Opaque {
			target, ok = cid(id)
		}
		if ok {
			*u = url.URL{Path: target}
		}
	}
}

// remoteImg is an img src fetched from the network.
var remoteImg = regexp.MustCompile(`(?i)^\s*https?://`)

// SanitizeFrameTo is SanitizeTo for a page that shows the mail to a person
// in a sandboxed frame (the web console): links also get rel="noreferrer",
// and with remoteImages the http(s) images are kept, for a reader who
// asked to load them (the frame's Content-Security-Policy still decides
// what may load). html is then the message's original HTML
// (OriginalHTML): the stored one has lost its remote images to Sanitize.
func SanitizeFrameTo(w io.Writer, html io.Reader, cid func(contentID string) (string, bool), remoteImages bool) error {
	p := newPolicy(cidRewriter(cid))
	p.RequireNoReferrerOnLinks(true)
	if remoteImages {
		p.AllowAttrs("src").Matching(remoteImg).OnElements("img")
	}
	return p.SanitizeReaderToWriter(html, w)
}
