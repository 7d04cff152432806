package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/inboxd/inboxd/corpus"
)

// servedHTML is the html of a message's body as the body route answers it.
func (e *env) servedHTML(inboxID, messageID string) string {
	e.t.Helper()
	r := e.get(e.admin, e.path("/inboxes/%s/messages/%s/body", inboxID, messageID))
	var b struct{ HTML *string }
	if err := json.Unmarshal(r.body, &b); err != nil || r.status != http.StatusOK || b.HTML == nil {
		e.t.Fatalf("body: %d %v %.300s", r.status, err, r.body)
	}
	return *b.HTML
}

// Every payload of the XSS corpus, stored through the real ingest and
// read over HTTP, comes back as HTML in which a browser's parser finds
// nothing that runs or loads what the policy never allowed.
func TestBodyHTMLResistsXSSCorpus(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	for i, p := range corpus.XSSPayloads() {
		d := e.deliver(ib, p.Message(fmt.Sprintf("xss%d@example.com", i)))
		got := e.servedHTML(ib, d.MessageID)
		if bad := corpus.UnsafeHTML(got); len(bad) > 0 {
			t.Errorf("%s: %v\nsent   %s\nserved %s", p.Name, bad, p.HTML, got)
		}
	}
}

// imgSrcs returns the src of every img in s, as a browser parses it.
func imgSrcs(t *testing.T, s string) []string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	var srcs []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "img" {
			src := "(none)"
			for _, a := range n.Attr {
				if a.Key == "src" {
					src = a.Val
				}
			}
			srcs = append(srcs, src)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return srcs
}

// A cid: image of a clean attachment is served with the attachment's URL;
// only that exact Content-ID (raw or %-encoded, RFC 2392) is rewritten,
// and never one of a suspicious part or a mere prefix. Unknown cid: URLs
// stay as they are: they fetch nothing.
func TestBodyRewritesCIDImages(t *testing.T) {
	e := newEnv(t, Config{})
	ib := e.boot.Inbox.ID
	p := corpus.XSSPayload{
		HTML: `<p>Logo</p><img src="cid:logo@x" alt="logo"><img src="CID:logo@x"><img src="cid:logo%40x">` +
			`<img src="cid:logo@x.evil"><img src="cid:run@x"><img src="cid:nobody@x"><a href="cid:logo@x">cid link</a>`,
		Parts: []corpus.XSSPart{
			{ContentID: "logo@x", Filename: "logo.gif"},
			{ContentID: "run@x", Filename: "run.exe", ContentType: "application/x-msdownload"},
		},
	}
	d := e.deliver(ib, p.Message("cid@example.com"))
	var m struct {
		Attachments []struct {
			ID         string
			ScanStatus string `json:"scan_status"`
		}
	}
	if err := json.Unmarshal(e.get(e.admin, e.path("/inboxes/%s/messages/%s", ib, d.MessageID)).body, &m); err != nil {
		t.Fatal(err)
	}
	var logo string
	for _, a := range m.Attachments {
		if a.ScanStatus == "clean" {
			logo = a.ID
		}
	}
	if len(m.Attachments) != 2 || logo == "" {
		t.Fatalf("attachments: %+v", m.Attachments)
	}
	served := e.servedHTML(ib, d.MessageID)
	url := e.path("/inboxes/%s/messages/%s/attachments/%s", ib, d.MessageID, logo)
	want := []string{url, url, url, "cid:logo@x.evil", "cid:run@x", "cid:nobody@x"}
	if got := imgSrcs(t, served); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("img srcs\n got %q\nwant %q\nhtml %s", got, want, served)
	}
	if !strings.Contains(served, `<a href="cid:logo@x"`) {
		t.Errorf("a cid: link is not an image and stays: %s", served)
	}
	if r := e.get(e.admin, url); r.status != http.StatusOK || string(r.body) != "GIF89a\x01\x00\x01\x00\x00\x00\x00," {
		t.Errorf("the rewritten URL does not serve the image: %d %q", r.status, r.body)
	}
}
