package message

import (
	"strings"
	"testing"
	"time"
)

func TestExtractReply(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "Hello\nworld\n\n", "Hello\nworld"},
		{"quoted lines", "Yes.\n> Shall we?\n> ok\n", "Yes."},
		{"interleaved", "> q1\nanswer 1\n> q2\nanswer 2\n", "answer 1\nanswer 2"},
		{"english", "Sounds good.\n\nOn Mon, Feb 2, 2026 at 10:00 AM Jane Doe <jane@example.com> wrote:\n> Lunch?\n", "Sounds good."},
		{"english wrapped", "Sounds good.\n\nOn Mon, Feb 2, 2026 at 10:00 AM Jane Doe <jane@example.com>\nwrote:\n\n> Lunch?\n", "Sounds good."},
		{"english wrapped three lines", "Ok\nOn Mon, 2 Feb 2026 at 10:00,\nJane Doe <jane@example.com>\nwrote:\n> x\n", "Ok"},
		{"german", "Passt.\n\nAm 02.02.2026 um 10:00 schrieb Max Mustermann <max@example.de>:\n> Termin?\n", "Passt."},
		{"french", "D'accord.\n\nLe lun. 2 févr. 2026 à 10:00, Jean <jean@example.fr> a écrit :\n> Réunion ?\n", "D'accord."},
		{"french nbsp", "Oui.\nLe 2 févr. 2026, Jean <jean@example.fr> a écrit\u00a0:\n> x\n", "Oui."},
		{"spanish", "Vale.\n\nEl lun, 2 feb 2026 a las 10:00, Ana (<ana@example.es>) escribió:\n> ¿Comemos?\n", "Vale."},
		{"dutch", "Prima.\n\nOp ma 2 feb. 2026 om 10:00 schreef Jan <jan@example.nl>:\n> Lunch?\n", "Prima."},
		{"italian", "Va bene.\n\nIl giorno lun 2 feb 2026 alle ore 10:00 Marco <marco@example.it> ha scritto:\n> Pranzo?\n", "Va bene."},
		{"portuguese", "Combinado.\n\nEm seg., 2 de fev. de 2026 às 10:00, João <joao@example.pt> escreveu:\n> Almoço?\n", "Combinado."},
		{"swedish", "Okej.\n\nDen 2 feb. 2026 kl. 10:00 skrev Anna <anna@example.se>:\n> Lunch?\n", "Okej."},
		{"danish", "Fint.\n\nDen 02.02.2026 kl. 10.00 skrev Lars <lars@example.dk>:\n> x\n", "Fint."},
		{"outlook block", "Approved.\n\nFrom: Alice <alice@example.com>\nSent: Monday, February 2, 2026 10:00 AM\nTo: Bob <bob@example.com>\nSubject: Budget\n\nPlease approve.\n", "Approved."},
		{"outlook bold", "Approved.\n\n*From:* Alice\n*Sent:* Monday\n*To:* Bob\n*Subject:* Budget\n\nold\n", "Approved."},
		{"outlook german", "Erledigt.\n\nVon: Alice <alice@example.de>\nGesendet: Montag, 2. Februar 2026 10:00\nAn: Bob\nBetreff: Budget\n\nalt\n", "Erledigt."},
		{"from line alone is content", "From: the team\nWe shipped it.\n", "From: the team\nWe shipped it."},
		{"original message", "See below.\n\n-----Original Message-----\nFrom: Alice\nold text\n", "See below."},
		{"ursprüngliche nachricht", "Siehe unten.\n\n-----Ursprüngliche Nachricht-----\nVon: Alice\nalt\n", "Siehe unten."},
		{"outlook underscores", "Done.\n\n________________________________\nFrom: Alice <alice@example.com>\nSent: Monday\nTo: Bob\n\nold\n", "Done."},
		{"underscores drawn by a person", "Title\n________________________________\nBody text\n", "Title\n________________________________\nBody text"},
		{"signature", "Thanks!\n\n-- \nBob\nACME Inc.\n", "Thanks!"},
		{"signature without trailing space", "Thanks!\n--\nBob\n", "Thanks!"},
		{"only a quote", "> just a quote\n> nothing else\n", "> just a quote\n> nothing else"},
		{"only an attribution and quote", "On Mon, Feb 2, 2026 Jane <j@x.com> wrote:\n> hi\n", "On Mon, Feb 2, 2026 Jane <j@x.com> wrote:\n> hi"},
		{"crlf", "Hi\r\n\r\n> old\r\n", "Hi"},
		{"leading blank lines and trailing spaces", "\n\n  Hi there  \n\n", "  Hi there"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExtractReply(tt.in); got != tt.want {
				t.Errorf("ExtractReply(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct{ name, in, want string }{
		{"collapse", "  Hello \n\n\t world  ", "Hello world"},
		{"empty", "", ""},
		{"runes not bytes", long, strings.Repeat("é", 240)},
		{"no trailing space at cut", strings.Repeat("a", 239) + " bcd", strings.Repeat("a", 239)},
		{"nbsp", "a\u00a0\u00a0b", "a b"},
		{"zero width preheader padding", "Sale\u200c \u200c \u034f \ufeffnow", "Sale now"},
		{"control characters", "a\x00\x01b", "a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Preview(tt.in); got != tt.want {
				t.Errorf("Preview(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// An empty text part beside HTML is no text part: the preview and the
// extracted text both come from the HTML.
func TestEmptyTextPartBesideHTML(t *testing.T) {
	raw := "Message-ID: <e@x>\r\nContent-Type: multipart/alternative; boundary=a\r\n\r\n" +
		"--a\r\nContent-Type: text/plain\r\n\r\n \r\n--a\r\nContent-Type: text/html\r\n\r\n<p>html only content</p>\r\n--a--\r\n"
	p := Parse([]byte(raw))
	if p.Preview != "html only content" || p.ExtractedText != "html only content" {
		t.Errorf("preview %q, extracted text %q", p.Preview, p.ExtractedText)
	}
}

func TestHTMLToText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"paragraphs", "<p>One</p><p>Two</p>", "One\n\nTwo"},
		{"br and div", "a<br>b<div>c</div>d", "a\nb\nc\nd"},
		{"entities", "<p>Fish &amp; chips &lt;3 &nbsp;&eacute;</p>", "Fish & chips <3  é"},
		{"script and style dropped", "<style>p{}</style><script>alert(1)</script><p>x</p>", "x"},
		{"head dropped", "<html><head><title>T</title></head><body>Body</body></html>", "Body"},
		{"whitespace collapsed", "<p>a\n   b\t c</p>", "a b c"},
		{"pre kept", "<pre>a\n  b</pre>", "a\n  b"},
		{"table cells", "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "a b\nc"},
		{"list", "<ul><li>one</li><li>two</li></ul>", "one\ntwo"},
		{"img alt", `<p>see <img alt="chart"> here</p>`, "see chart here"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := HTMLToText(tt.in); got != tt.want {
				t.Errorf("HTMLToText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestHTMLQuotesDropped(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"gmail", `<div>Yes!</div><div class="gmail_quote">On Mon wrote:<blockquote>old</blockquote></div>`, "Yes!"},
		{"blockquote", `<p>Agreed</p><blockquote type="cite">old</blockquote>`, "Agreed"},
		{"outlook", `<p>Done</p><div id="divRplyFwdMsg"><b>From:</b> A</div><div>old text</div>`, "Done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := "Content-Type: text/html\r\n\r\n" + tt.in
			if got := Parse([]byte(raw)).ExtractedText; got != tt.want {
				t.Errorf("ExtractedText = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestScanStatus(t *testing.T) {
	tests := []struct {
		filename, ctype, want string
	}{
		{"report.pdf", "application/pdf", "clean"},
		{"photo.JPG", "image/jpeg", "clean"},
		{"", "text/plain", "clean"},
		{"setup.exe", "application/octet-stream", "suspicious"},
		{"invoice.pdf.exe", "application/pdf", "suspicious"},
		{"Invoice.PDF.SCR", "application/octet-stream", "suspicious"},
		{"run.bat", "", "suspicious"},
		{"script.js", "text/plain", "suspicious"},
		{"macro.vbs", "text/plain", "suspicious"},
		{"app.jar", "application/zip", "suspicious"},
		{"evil.ps1", "text/plain", "suspicious"},
		{"shortcut.lnk", "application/octet-stream", "suspicious"},
		{"x", "application/x-msdownload", "suspicious"},
		{"x", "application/x-dosexec", "suspicious"},
		{"x", "application/x-sh", "suspicious"},
		{"x", "application/java-archive", "suspicious"},
		// QUIRK cases.
		{"payload.exe. ", "application/octet-stream", "suspicious"},
		{"invoice\u202egpj.exe", "image/jpeg", "suspicious"},
	}
	for _, tt := range tests {
		if got := scanStatus(tt.filename, tt.ctype); got != tt.want {
			t.Errorf("scanStatus(%q, %q) = %q, want %q", tt.filename, tt.ctype, got, tt.want)
		}
	}
}

func TestAddressFallback(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Address
	}{
		{"strict", `"Doe, John" <john@example.com>, jane@example.com`, []Address{{"john@example.com", "Doe, John"}, {"jane@example.com", ""}}},
		{"encoded name", `=?utf-8?q?J=C3=BCrgen?= <j@example.de>`, []Address{{"j@example.de", "Jürgen"}}},
		{"encoded word in quotes", `"=?utf-8?q?J=C3=BCrgen?=" <j@example.de>`, []Address{{"j@example.de", "Jürgen"}}},
		{"raw utf-8 name", `Zoë <zoe@example.de>`, []Address{{"zoe@example.de", "Zoë"}}},
		{"unquoted specials", `Dr. J. Smith, PhD <smith@example.com>`, []Address{{"smith@example.com", "Dr. J. Smith, PhD"}}},
		{"unquoted comma in names", `Smith, Jane <jane@x.example>, bob@x.example, Doe, John <john@x.example>`,
			[]Address{{"jane@x.example", "Smith, Jane"}, {"bob@x.example", ""}, {"john@x.example", "Doe, John"}}},
		{"name pieces without an address at the end", `bob@x.example, Doe, John`, []Address{{"bob@x.example", ""}, {"", "Doe, John"}}},
		{"no angle brackets junk", `john@example.com (John) extra`, []Address{{"john@example.com", "John extra"}}},
		{"two without comma", `Bob <bob@x.example> Bobby <bobby@x.example>`, []Address{{"bob@x.example", "Bob"}, {"bobby@x.example", "Bobby"}}},
		{"semicolons between", `"Smith, J" <js@x.example>; other@x.example`, []Address{{"js@x.example", "Smith, J"}, {"other@x.example", ""}}},
		{"semicolons, no names", `a@x.example;b@y.example; c@z.example`, []Address{{"a@x.example", ""}, {"b@y.example", ""}, {"c@z.example", ""}}},
		{"spaces between", `a@x.example b@y.example`, []Address{{"a@x.example", ""}, {"b@y.example", ""}}},
		// The address is the one in angle brackets, not one in the name.
		{"an address as the name", `support@bank.example <x@evil.example>`, []Address{{"x@evil.example", "support@bank.example"}}},
		{"a name holding an address", `PayPal service@paypal.example <x@evil.example>, a@x.example <b@y.example>`,
			[]Address{{"x@evil.example", "PayPal service@paypal.example"}, {"b@y.example", "a@x.example"}}},
		{"a name, then a bare address", `John Smith, jane@x.example`, []Address{{"", "John Smith"}, {"jane@x.example", ""}}},
		{"two name pieces, then a bare address", `Smith, John, jane@x.example`, []Address{{"", "Smith, John"}, {"jane@x.example", ""}}},
		{"a name in two pieces before its address", `Smith, John john@x.example`, []Address{{"john@x.example", "Smith, John"}}},
		{"a name in two pieces before its address, then another", `Müller, Hans hans@x.example, other@y.example`, []Address{{"hans@x.example", "Müller, Hans"}, {"other@y.example", ""}}},
		{"doubled angle brackets", `<<oops>>, plain@x.example`, []Address{{"", "oops"}, {"plain@x.example", ""}}},
		{"no address at all", `Undisclosed recipients`, []Address{{"", "Undisclosed recipients"}}},
		{"group", `undisclosed-recipients:;`, []Address{}},
		{"empty", ``, []Address{}},
		{"latin-1 raw bytes", "M\xfcller <m@example.de>", []Address{{"m@example.de", "Müller"}}},
		// RFC 5322 §4.4 obs-route: the route is not the address's and is
		// no name either.
		{"obsolete route", `<@route.example:k@x.org>`, []Address{{"k@x.org", ""}}},
		{"obsolete route of two hops, named", `Kim <@a.example,@b.example:k@x.org>, j@y.org`, []Address{{"k@x.org", "Kim"}, {"j@y.org", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseAddressList(tt.in)
			if len(got) != len(tt.want) {
				t.Fatalf("parseAddressList(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("parseAddressList(%q)[%d] = %#v, want %#v", tt.in, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"script", `<p>hi</p><script>alert(1)</script>`, `<p>hi</p>`},
		{"event handler", `<p onclick="x()">hi</p>`, `<p>hi</p>`},
		{"javascript url", `<a href="javascript:alert(1)">x</a>`, `x`},
		{"link", `<a href="https://example.com/">x</a>`, `<a href="https://example.com/" rel="nofollow noopener" target="_blank">x</a>`},
		{"remote image", `<img src="https://t.example/p.gif" alt="p">`, `<img alt="p">`},
		{"protocol-relative image", `<img src="//t.example/p.gif">`, ``},
		{"cid image", `<img src="cid:logo@x">`, `<img src="cid:logo@x">`},
		{"data image", `<img src="data:image/png;base64,iVBORw0KGgo=">`, `<img src="data:image/png;base64,iVBORw0KGgo=">`},
		{"form iframe style", `<form><input name=a></form><iframe src="https://x"></iframe><style>p{}</style>ok`, `ok`},
		{"inline style", `<p style="color:red">x</p>`, `<p>x</p>`},
		{"table", `<table><tr><td>a</td></tr></table>`, `<table><tr><td>a</td></tr></table>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sanitize(tt.in); got != tt.want {
				t.Errorf("Sanitize(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestParseQuirks covers the lenient paths that are marked QUIRK in the code.
func TestParseQuirks(t *testing.T) {
	tests := []struct {
		name  string
		raw   string
		check func(t *testing.T, p *Parsed)
	}{
		{"mbox From line", "From someone@example.com Mon Jan  1 00:00:00 2001\nSubject: hi\n\nbody\n", func(t *testing.T, p *Parsed) {
			want(t, p.Subject, "hi")
			want(t, p.Text, "body\n")
		}},
		{"leading whitespace before first field", " Subject: hi\nFrom: a@example.com\n\nbody", func(t *testing.T, p *Parsed) {
			want(t, p.Subject, "hi")
			want(t, p.From.Email, "a@example.com")
		}},
		{"no blank line before body", "Subject: hi\nThis is the body\nsecond line\n", func(t *testing.T, p *Parsed) {
			want(t, p.Subject, "hi")
			want(t, p.Text, "This is the body\nsecond line\n")
		}},
		{"no blank line, a body line like a field", "Subject: hi\nHello Ann,\nNote: see below\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "Hello Ann,\nNote: see below\n")
			want(t, p.ParseError, "")
		}},
		{"junk line inside the header", "Subject: hi\nthis line is garbage\nMessage-ID: <g@x.example>\nIn-Reply-To: <p@x.example>\n\nbody\n", func(t *testing.T, p *Parsed) {
			want(t, p.Subject, "hi")
			want(t, strings.Join(p.MessageID, ","), "<g@x.example>")
			want(t, strings.Join(p.InReplyTo, ","), "<p@x.example>")
			want(t, p.Text, "body\n")
			wantContains(t, p.ParseError, "no field")
		}},
		{"no header at all", "just text\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "just text\n")
		}},
		{"unwrapped continuation", "Content-Type: multipart/mixed;\nboundary=\"b\"\n\n--b\n\ntext\n--b--\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "text")
			want(t, p.ParseError, "")
		}},
		{"multipart without boundary", "Content-Type: multipart/mixed\n\nhello\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "hello\n")
			wantContains(t, p.ParseError, "without boundary")
		}},
		{"boundary never appears", "Content-Type: multipart/mixed; boundary=zz\n\nhello\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "hello\n")
			wantContains(t, p.ParseError, "not found")
		}},
		{"missing closing boundary", "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nhello\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "hello\n")
			wantContains(t, p.ParseError, "missing closing boundary")
		}},
		{"empty multipart", "Content-Type: multipart/mixed; boundary=b\n\n", func(t *testing.T, p *Parsed) {
			wantContains(t, p.ParseError, "empty")
		}},
		{"nested multipart reusing boundary", "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: text/plain\n\nplain\n--b\nContent-Type: text/html\n\n<p>html</p>\n--b--\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "plain")
			want(t, p.HTML, "<p>html</p>")
			want(t, p.ParseError, "")
		}},
		{"list footer after an HTML-only body", "Content-Type: multipart/mixed; boundary=M\n\n--M\nContent-Type: multipart/alternative; boundary=N\n\n--N\nContent-Type: text/html\n\n<p>The real message</p>\n--N--\n" +
			"--M\nContent-Type: text/plain\nContent-Disposition: inline\n\n____\nlist mailing list\n--M--\n", func(t *testing.T, p *Parsed) {
			want(t, p.HasText, false)
			want(t, p.Text, "")
			want(t, p.HTML, "<p>The real message</p>")
			want(t, p.Preview, "The real message")
			want(t, len(p.Attachments), 1)
			want(t, p.Attachments[0].ContentType+" "+p.Attachments[0].Disposition, "text/plain inline")
		}},
		{"list footer after an HTML-only leaf", "Content-Type: multipart/mixed; boundary=M\n\n--M\nContent-Type: text/html\n\n<p>The real message</p>\n" +
			"--M\nContent-Type: text/plain\nContent-Disposition: inline\n\n____\nlist mailing list\n--M--\n", func(t *testing.T, p *Parsed) {
			want(t, p.HasText, false)
			want(t, p.HTML, "<p>The real message</p>")
			want(t, p.Preview, "The real message")
			want(t, len(p.Attachments), 1)
			want(t, p.Attachments[0].ContentType+" "+p.Attachments[0].Disposition, "text/plain inline")
		}},
		{"one part with a name is the body", "Content-Type: text/plain; charset=utf-8; name=\"message.txt\"\n\nhello\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "hello\n")
			want(t, len(p.Attachments), 0)
		}},
		{"one part marked an attachment is not", "Content-Type: text/plain; name=\"a.txt\"\nContent-Disposition: attachment\n\nhello\n", func(t *testing.T, p *Parsed) {
			want(t, p.HasText, false)
			want(t, len(p.Attachments), 1)
		}},
		{"stray empty part", "Content-Type: multipart/mixed; boundary=b\n\n--b\n\ntext\n--b\n\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "text")
			want(t, len(p.Attachments), 0)
		}},
		{"bad base64 keeps the rest", "Content-Type: application/pdf\nContent-Transfer-Encoding: base64\n\nPGh0*bWw+Cg==\n", func(t *testing.T, p *Parsed) {
			want(t, string(p.Attachments[0].Data), "<html>\n")
			wantContains(t, p.ParseError, "invalid base64")
		}},
		{"concatenated base64", "Content-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\nYQ==\nYg==\n", func(t *testing.T, p *Parsed) {
			want(t, string(p.Attachments[0].Data), "ab")
			want(t, p.ParseError, "")
		}},
		{"bad quoted-printable", "Content-Transfer-Encoding: quoted-printable\n\na=zz b=3D c\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "a=zz b= c\n")
			wantContains(t, p.ParseError, "quoted-printable")
		}},
		{"identity encoding typo", "Content-Transfer-Encoding: 8-bit\n\nhi\n", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "hi\n")
			want(t, p.ParseError, "")
		}},
		{"unknown encoding", "Content-Type: application/zip\nContent-Transfer-Encoding: base9000\n\nxyz", func(t *testing.T, p *Parsed) {
			want(t, string(p.Attachments[0].Data), "xyz")
			wantContains(t, p.ParseError, "unknown transfer encoding")
		}},
		{"unknown charset, valid utf-8", "Content-Type: text/plain; charset=x-bogus\n\nZoë", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "Zoë")
			want(t, p.ParseError, "")
		}},
		{"unknown charset, 8-bit", "Content-Type: text/plain; charset=x-bogus\n\nZo\xeb", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "Zoë")
		}},
		{"undeclared 8-bit", "Subject: Gr\xfc\xdfe\n\nK\xf6ln \x80", func(t *testing.T, p *Parsed) {
			want(t, p.Subject, "Grüße")
			want(t, p.Text, "Köln €")
		}},
		{"html meta charset", "Content-Type: text/html\n\n<meta charset=\"koi8-r\"><p>\xf0\xd2\xc9\xd7\xc5\xd4</p>", func(t *testing.T, p *Parsed) {
			want(t, p.HTML, "<p>Привет</p>")
		}},
		{"windows path in filename", "Content-Type: application/pdf; name=\"C:\\\\Users\\\\me\\\\a.pdf\"\n\nx", func(t *testing.T, p *Parsed) {
			want(t, p.Attachments[0].Filename, "a.pdf")
		}},
		{"duplicate and broken params", "Content-Type: application/pdf; name=\"a.pdf\"; name=\"b.pdf\"; x=\"unterminated\n\nx", func(t *testing.T, p *Parsed) {
			want(t, p.Attachments[0].Filename, "a.pdf")
			want(t, p.Attachments[0].ContentType, "application/pdf")
		}},
		{"rfc 2231 in lenient path", "Content-Type: application/pdf; a=\"1\"; a=\"2\"\nContent-Disposition: attachment; filename*0*=utf-8''%C3%A4; filename*1=.pdf; x=(\n\nx", func(t *testing.T, p *Parsed) {
			want(t, p.Attachments[0].Filename, "ä.pdf")
		}},
		{"rfc 2231 in latin-1", "Content-Type: text/plain\nContent-Disposition: attachment; filename*=iso-8859-1'en'caf%E9.txt\n\nx", func(t *testing.T, p *Parsed) {
			want(t, p.Attachments[0].Filename, "café.txt")
		}},
		{"rfc 2231 continuations in windows-1252", "Content-Type: application/pdf; name*0*=windows-1252''%80uro; name*1=.pdf\n\nx", func(t *testing.T, p *Parsed) {
			want(t, p.Attachments[0].Filename, "€uro.pdf")
		}},
		{"bad content type is text", "Content-Type: garbage\n\nhello", func(t *testing.T, p *Parsed) {
			want(t, p.Text, "hello")
		}},
		{"date with comment and no seconds", "Date: Mon, 2 Feb 2026 10:00 +0100 (CET)\n\nx", func(t *testing.T, p *Parsed) {
			want(t, p.Date.Equal(time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC)), true)
		}},
		{"date GMT offset", "Date: Mon, 2 Feb 2026 10:00:00 GMT+0100\n\nx", func(t *testing.T, p *Parsed) {
			want(t, p.Date.Equal(time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC)), true)
		}},
		{"unparseable date", "Date: sometime\n\nx", func(t *testing.T, p *Parsed) {
			want(t, p.Date.IsZero(), true)
		}},
		{"several From/To fields", "From: a@example.com\nTo: b@example.com\nTo: c@example.com\n\nx", func(t *testing.T, p *Parsed) {
			want(t, len(p.To), 2)
			want(t, p.From.Email, "a@example.com")
		}},
		{"ids in order, raw", "Message-ID: <a@x>\nMessage-ID: <b@x>\nIn-Reply-To: <p@x> (comment)\nReferences: <r1@x>\n <r2@x>\n\nx", func(t *testing.T, p *Parsed) {
			want(t, strings.Join(p.MessageID, "|"), "<a@x>|<b@x>")
			want(t, strings.Join(p.InReplyTo, "|"), "<p@x> (comment)")
			want(t, strings.Join(p.References, "|"), "<r1@x> <r2@x>")
		}},
		{"attached message is not the body", "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/rfc822\n\nSubject: inner\n\ninner body\n--b--\n", func(t *testing.T, p *Parsed) {
			want(t, p.HasText, false)
			want(t, p.Attachments[0].ContentType, "message/rfc822")
			want(t, string(p.Attachments[0].Data), "Subject: inner\n\ninner body")
		}},
		{"text attachment is an attachment", "Content-Type: text/plain\nContent-Disposition: attachment; filename=notes.txt\n\nnotes", func(t *testing.T, p *Parsed) {
			want(t, p.HasText, false)
			want(t, p.Attachments[0].Filename, "notes.txt")
		}},
		{"preview falls back to html", "Content-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: text/plain\n\n  \n--b\nContent-Type: text/html\n\n<p>Hello <b>there</b></p>\n--b--\n", func(t *testing.T, p *Parsed) {
			want(t, p.Preview, "Hello there")
			want(t, p.HasText, true)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parse([]byte(tt.raw))
			checkInvariants(t, tt.name, p)
			tt.check(t, p)
		})
	}
}

func want[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func wantContains(t *testing.T, got, sub string) {
	t.Helper()
	if !strings.Contains(got, sub) {
		t.Errorf("%q does not contain %q", got, sub)
	}
}
