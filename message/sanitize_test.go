package message

import (
	"strings"
	"testing"
)

func sanitizeTo(t *testing.T, html string, cid func(string) (string, bool)) string {
	t.Helper()
	var b strings.Builder
	if err := SanitizeTo(&b, strings.NewReader(html), cid); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The policy's URL rules, and SanitizeTo without cid answering as
// Sanitize does (the stored HTML is Sanitize's, the served SanitizeTo's).
func TestSanitizePolicy(t *testing.T) {
	const gif = "data:image/gif;base64,R0lGODlhAQABAAAAACw="
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{" \n\t", " \n\t"},
		{`<p onclick="x()">Hi</p><script>alert(1)</script>`, `<p>Hi</p>`},
		{`<img src="` + gif + `" alt="dot">`, `<img src="` + gif + `" alt="dot">`},
		{`<img src="cid:logo@x">`, `<img src="cid:logo@x">`},
		{`<img src="https://tracker.example/p.gif">`, ``},
		// An SVG can carry script; raster data: images only.
		{`<img src="data:image/svg+xml;base64,PHN2Zz4=">`, ``},
		// data: is for images: never a link or a citation.
		{`<a href="` + gif + `">x</a>`, `x`},
		{`<blockquote cite="` + gif + `">q</blockquote>`, `<blockquote>q</blockquote>`},
		{`<a href="https://example.com/a?b#c">x</a>`, `<a href="https://example.com/a?b#c" rel="nofollow noopener" target="_blank">x</a>`},
		{`<a href="page.html#x:y">x</a><a href="mailto:a@b.c">m</a>`, `<a href="page.html#x:y" rel="nofollow">x</a><a href="mailto:a@b.c" rel="nofollow">m</a>`},
		{`<a href="javascript:alert(1)">x</a><a href="jav&#x09;ascript:alert(1)">y</a>`, `xy`},
	} {
		if got := Sanitize(tc.in); got != tc.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := sanitizeTo(t, tc.in, nil); got != tc.want {
			t.Errorf("SanitizeTo(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// cid: images become the URL cid gives, inside the sanitizer: the URL is
// escaped as any attribute is, whatever the Content-ID holds.
func TestSanitizeToRewritesCIDImages(t *testing.T) {
	urls := map[string]string{"logo@x": "/att/1", `Q"`: "/att/2", "a b": "/att/3", "x": `/att/"><script>`}
	cid := func(id string) (string, bool) { u, ok := urls[id]; return u, ok }
	for _, tc := range []struct{ in, want string }{
		{`<img src="cid:logo@x" alt="l">`, `<img src="/att/1" alt="l">`},
		{`<img src="CID:logo@x">`, `<img src="/att/1">`},
		{`<img src="cid:logo%40x">`, `<img src="/att/1">`},
		{`<img src="cid:logo@x.evil">`, `<img src="cid:logo@x.evil">`},
		{`<img src="cid:unknown">`, `<img src="cid:unknown">`},
		{`<img src="cid:Q&quot;"><img src="cid:x/onerror=alert(1)//">`, `<img src="/att/2"><img src="cid:x/onerror=alert(1)//">`},
		{`<img src="cid:a%20b">`, `<img src="/att/3">`},
		{`<img src="cid:x">`, `<img src="/att/%22%3E%3Cscript%3E">`},
		{`<a href="cid:logo@x">link</a>`, `<a href="cid:logo@x" rel="nofollow">link</a>`},
		{`<p>cid:logo@x</p>`, `<p>cid:logo@x</p>`},
	} {
		if got := sanitizeTo(t, tc.in, cid); got != tc.want {
			t.Errorf("SanitizeTo(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The frame's policy is SanitizeTo's plus rel="noreferrer" on links, and,
// asked for, the remote images SanitizeTo drops; script stays out either
// way, and cid: images are rewritten as SanitizeTo rewrites them.
func TestSanitizeFrameTo(t *testing.T) {
	cid := func(id string) (string, bool) { return "/inline/" + id, id == "logo@x" }
	const in = `<a href="https://example.com/">x</a><img src="https://t.example/p.gif"><img src="cid:logo@x"><img src="javascript:alert(1)"><script>alert(1)</script>`
	for _, tc := range []struct {
		remote bool
		want   string
	}{
		{false, `<a href="https://example.com/" rel="nofollow noreferrer noopener" target="_blank">x</a><img src="/inline/logo@x">`},
		{true, `<a href="https://example.com/" rel="nofollow noreferrer noopener" target="_blank">x</a><img src="https://t.example/p.gif"><img src="/inline/logo@x">`},
	} {
		var b strings.Builder
		if err := SanitizeFrameTo(&b, strings.NewReader(in), cid, tc.remote); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("remote %v:\n got %s\nwant %s", tc.remote, b.String(), tc.want)
		}
	}
}

// OriginalHTML is the HTML part as sent, decoded, with what Sanitize
// removes still in it; a message without HTML has none.
func TestOriginalHTML(t *testing.T) {
	raw := "Subject: x\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/html; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
		"<p>Gr=FC=DFe</p><img src=3D\"https://t.example/p.gif\">\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=a.pdf\r\n\r\n%PDF\r\n--b--\r\n"
	html, ok := OriginalHTML(strings.NewReader(raw))
	if !ok || html != "<p>Grüße</p><img src=\"https://t.example/p.gif\">" {
		t.Errorf("OriginalHTML = %q, %v", html, ok)
	}
	if html, ok := OriginalHTML(strings.NewReader("Subject: x\r\n\r\nplain\r\n")); ok || html != "" {
		t.Errorf("a text message: %q, %v", html, ok)
	}
}
