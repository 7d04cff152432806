package web

import (
	"bufio"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"

	"github.com/inboxd/inboxd/app"
	"github.com/inboxd/inboxd/message"
)

// The mail frame (SPEC §12): a message's HTML never runs in the console's
// origin. It is served from a URL of its own with a policy that makes the
// document a sandbox (an opaque origin, no script, no forms, no plugins;
// popups only, so that links open in a new tab, outside the sandbox), that
// loads nothing but the message's own inline images (and, on request, its
// remote ones), and that only the console may frame. The console shows it
// in an <iframe sandbox> without allow-scripts or allow-same-origin, so
// either alone keeps it inert.

// frameSandbox are the only sandbox flags of the frame, in its policy and
// on the console's iframe alike.
const frameSandbox = "allow-popups allow-popups-to-escape-sandbox"

// frameStyle makes mail readable without the sender's CSS (the sanitizer
// keeps none): the frame's only style, allowed by 'unsafe-inline', which
// in a document without script can only style it.
const frameStyle = `body{margin:12px;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC",sans-serif;` +
	`color:#1d1d1f;background:#fff;overflow-wrap:anywhere}img{max-width:100%;height:auto}pre{white-space:pre-wrap}` +
	`table{max-width:100%}blockquote{margin:0 0 0 .6em;padding-left:.6em;border-left:3px solid #ccc;color:#555}`

// hostSource matches a Host header that can stand in a CSP source
// expression as it is: a name or address and a port, nothing that could
// end the directive.
var hostSource = regexp.MustCompile(`^[A-Za-z0-9.\-]+(:[0-9]+)?$|^\[[0-9A-Fa-f:.]+\](:[0-9]+)?$`)

// frameCSP is the frame's policy: images only from inlineBase (the
// message's signed inline URLs: its own cid: attachments, SPEC §12), and
// with remote also from the network. Not data: — the SPEC limits img-src
// to the cid: attachments, so an image the HTML carries in a data: URI
// stays blank (the sanitized HTML keeps it for API clients).
func frameCSP(r *http.Request, inlineBase string, remote bool) string {
	// The sandbox makes the document's own origin opaque, so the sources
	// name the console's origin as the browser reached it.
	var img []string
	ancestors := "'self'"
	if hostSource.MatchString(r.Host) {
		origin := "http://" + r.Host // also matches https (CSP 3 upgrades the scheme)
		if isHTTPS(r) {
			origin = "https://" + r.Host
		}
		img = append(img, origin+inlineBase)
		ancestors += " " + origin
	}
	if remote {
		img = append(img, "https:", "http:")
	}
	if img == nil {
		img = []string{"'none'"}
	}
	return "sandbox " + frameSandbox + "; default-src 'none'; img-src " + strings.Join(img, " ") + "; style-src 'unsafe-inline'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors " + ancestors
}

// frame answers the sanitized HTML of a message as a document of its own;
// ?images=remote also keeps its remote images (from the message as
// received: the stored HTML has lost them).
func (c *Console) frame(w http.ResponseWriter, r *http.Request) {
	caller, err := c.caller(r)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	inboxID, messageID := r.PathValue("inbox_id"), r.PathValue("message_id")
	b, err := c.app.MessageBody(r.Context(), caller, inboxID, messageID)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	if b.Parts.HTML == nil {
		c.writeError(w, r, app.Errorf(app.ENotFound, "This message has no HTML part."))
		return
	}
	remote := r.URL.Query().Get("images") == "remote"
	var html io.Reader
	if remote {
		s, ok, err := c.app.OriginalHTML(r.Context(), caller, inboxID, messageID)
		if err != nil {
			c.writeError(w, r, err)
			return
		}
		if ok {
			html = strings.NewReader(s)
		}
	}
	if html == nil {
		rc := b.Parts.HTML.Open(r.Context())
		defer rc.Close()
		html = rc
	}
	inlineBase := "/console/inline/" + c.app.InlineToken(caller, b) + "/"
	var cid func(string) (string, bool)
	if b.Inline != nil {
		cid = func(contentID string) (string, bool) {
			id, ok := b.Inline[contentID]
			return inlineBase + id, ok
		}
	}
	h := w.Header()
	h.Set("Content-Security-Policy", frameCSP(r, inlineBase, remote))
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteString(`<!doctype html><html><head><meta charset="utf-8"><base target="_blank"><style>` + frameStyle + `</style></head><body>`)
	if err := message.SanitizeFrameTo(bw, html, cid, remote); err != nil {
		// The status is gone with the first bytes: cut the answer short
		// so the browser shows a broken frame, not a complete-looking one.
		if r.Context().Err() == nil {
			c.log.Error("web: mail frame", "message", messageID, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
	bw.WriteString("</body></html>\n")
	bw.Flush()
}

// inline answers an inline image of a message by the signed token the
// frame's URLs carry: the frame's requests have no cookie. Only images,
// and as downloads that run nothing if opened on their own.
func (c *Console) inline(w http.ResponseWriter, r *http.Request) {
	at, stream, err := c.app.InlineAttachment(r.Context(), r.PathValue("token"), r.PathValue("attachment_id"))
	if err == nil && !strings.HasPrefix(at.ContentType, "image/") {
		err = app.ErrNotFound
	}
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", at.ContentType)
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": at.ID}))
	h.Set("Cache-Control", "private, max-age=900")
	// The frame that asks has an opaque origin: same-site would refuse it.
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	if err := stream(w); err != nil {
		if r.Context().Err() == nil {
			c.log.Error("web: inline image", "attachment", at.ID, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}
