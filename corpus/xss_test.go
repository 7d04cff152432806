package corpus

import (
	"strings"
	"testing"
)

// UnsafeHTML is what the body route's XSS tests rely on, so it must see
// through what browsers decode, and pass what the sanitizer keeps.
func TestUnsafeHTML(t *testing.T) {
	for _, tc := range []struct {
		html string
		want string // a substring of the first finding; "" for safe
	}{
		{`<p title="x">Hi <b>there</b></p><a href="https://example.com/" rel="nofollow">x</a>`, ""},
		{`<img src="/v1/projects/p/inboxes/i/messages/m/attachments/a" alt="logo">`, ""},
		{`<img src="data:image/png;base64,R0lGODlhAQABAAAAACw=">`, ""},
		{`<img src="cid:logo@x"><a href="mailto:a@b.c">a</a><a href="page.html#x:y">x</a>`, ""},
		{`<p>javascript:alert(1) as text, and &lt;script&gt;</p>`, ""},
		{`<script>alert(1)</script>`, "<script>"},
		{`<p><style>p{}</style></p>`, "<style>"},
		{`<img src=x onerror=alert(1)>`, "event handler"},
		{`<img src="x" ONLOAD="alert(1)">`, "event handler"},
		{`<a href="jav&#x09;ascript:alert(1)">x</a>`, "javascript:"},
		{"<a href=\" \x01 JAVA\nSCRIPT:alert(1)\">x</a>", "javascript:"},
		{`<a href="&#118;bscript:x">x</a>`, "vbscript:"},
		{`<a href="data:image/png;base64,R0lGODlhAQABAAAAACw=">x</a>`, "data:"},
		{`<img src="data:image/svg+xml;base64,PHN2Zz4=">`, "data:"},
		{`<img srcset="a.png 1x, javascript:alert(1) 2x">`, "javascript:"},
		{`<svg><a xlink:href="https://x/">x</a></svg>`, "in svg"},
		{`<math><mi>x</mi></math>`, "in math"},
		{`<iframe srcdoc="x"></iframe>`, "<iframe>"},
		{`<div srcdoc="x"></div>`, "inline document"},
		{`<div style="background: U/**/RL( x )">x</div>`, "url("},
		{`<div style="width:expression(alert(1))">x</div>`, "expression("},
		{`<div style="background:u\72l(x)">x</div>`, "CSS escape"},
		{`<form action="https://x/"><button formaction="javascript:x">b</button></form>`, "<form>"},
		{`<button formaction="javascript:x">b</button>`, "javascript:"},
		{`<base href="https://evil.example/">`, "<base>"},
		{`<meta http-equiv="refresh" content="0;url=https://evil.example/">`, "<meta>"},
		{`<object data="x"></object><embed src="x">`, "<object>"},
		// Parsed with scripting off, as a sandboxed frame without
		// allow-scripts parses it, noscript holds markup.
		{`<noscript><img src=x onerror=alert(1)></noscript>`, "event handler"},
	} {
		got := UnsafeHTML(tc.html)
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: flagged safe HTML: %v", tc.html, got)
		case tc.want != "" && (len(got) == 0 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: findings %v, want one with %q first", tc.html, got, tc.want)
		}
	}
}

func TestXSSPayloadsAreMessages(t *testing.T) {
	ps := XSSPayloads()
	if len(ps) < 30 {
		t.Fatalf("%d payloads", len(ps))
	}
	names := map[string]bool{}
	for _, p := range ps {
		if names[p.Name] {
			t.Errorf("duplicate payload name %q", p.Name)
		}
		names[p.Name] = true
		if m := p.Message("x@example.com"); !strings.Contains(m, "Subject: "+p.Name+"\r\n") || strings.Count(m, "--=_xss\r\n") != 1+len(p.Parts) {
			t.Errorf("%s: message:\n%s", p.Name, m)
		}
	}
}
