// Package mailgen builds the synthetic but realistic messages that the load
// tools send (smtpload) and store (seed): multipart/alternative text and
// HTML drawn from a small multilingual vocabulary, RFC 2047 encoded names and
// subjects, threading headers, quoted replies and an optional attachment. It
// is its own package so that both tools produce the same mail.
package mailgen

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"math/rand/v2"
	"mime"
	"time"
)

// Vocabulary is the word list message text is drawn from, most frequent
// first (words are picked with a Zipf distribution, so the head is common
// and the tail selective). It mixes English with German, Russian and
// Japanese so that search has every script to find.
var Vocabulary = []string{
	"the", "and", "to", "of", "a", "in", "for", "is", "on", "that", "with", "please", "thanks",
	"meeting", "invoice", "order", "delivery", "report", "update", "project", "review", "attached",
	"schedule", "customer", "payment", "account", "question", "tomorrow", "deadline", "contract",
	"Rechnung", "Lieferung", "Besprechung", "Grüße", "Straße", "Bestellung", "Vertrag", "Termin",
	"привет", "счёт", "встреча", "доставка", "спасибо", "договор", "заказ", "отчёт",
	"会議", "請求書", "配送", "東京", "ありがとう", "見積もり", "契約", "報告書",
	"budget", "quarterly", "migration", "kubernetes", "postgres", "latency", "benchmark", "rollout",
	"Überweisung", "Fälligkeit", "Zusammenfassung", "Kündigung", "подтверждение", "оплата",
	"プロジェクト", "締め切り", "打ち合わせ", "大阪", "zeppelin", "quokka", "marzipan", "saxophone",
}

var senders = []struct{ name, email string }{
	{"Alice Example", "alice@example.com"},
	{"Bob Builder", "bob@example.org"},
	{"Jürgen Müller", "juergen@example.de"},
	{"Анна Иванова", "anna@example.ru"},
	{"山田太郎", "yamada@example.jp"},
	{"Billing", "billing@shop.example.net"},
	{"", "noreply@notifications.example.com"},
}

// Message describes one message to build.
type Message struct {
	ID         string    // Message-ID without angle brackets
	Subject    string    // decoded; a reply's is usually "Re: " + the parent's
	To         string    // recipient address
	Date       time.Time // the Date header
	InReplyTo  string    // the parent's Message-ID, "" for the first of a thread
	References []string  // oldest first, without angle brackets
	Size       int       // approximate size of the whole message in bytes
	Attachment bool      // add an attachment taking about half of Size
	// AttachmentBytes, when > 0, is the attachment's exact decoded size
	// (implies Attachment); Size then bounds the rest of the message.
	AttachmentBytes int
}

// wordTable holds word indexes in proportion to a Zipf distribution
// (weight 1/(rank+4)^1.1), so that picking a word is one table lookup:
// rand.Zipf's exp and log were most of the cost of a 64 KB message.
var wordTable = func() []uint8 {
	var table []uint8
	for i := range Vocabulary {
		for range int(4000 / math.Pow(float64(i+4), 1.1)) {
			table = append(table, uint8(i))
		}
	}
	return table
}()

func word(rng *rand.Rand) string { return Vocabulary[wordTable[rng.IntN(len(wordTable))]] }

// Subject returns a subject of a few words.
func Subject(rng *rand.Rand) string {
	var b bytes.Buffer
	for i := range 3 + rng.IntN(4) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(word(rng))
	}
	return b.String()
}

// Build returns the message's bytes, with CRLF line endings.
func Build(m Message, rng *rand.Rand) []byte {
	var b bytes.Buffer
	b.Grow(m.Size + m.AttachmentBytes*14/10 + 1024)
	from := senders[rng.IntN(len(senders))]
	fmt.Fprintf(&b, "From: %s\r\n", address(from.name, from.email))
	fmt.Fprintf(&b, "To: %s\r\n", m.To)
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", m.Subject))
	fmt.Fprintf(&b, "Date: %s\r\n", m.Date.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s>\r\n", m.ID)
	if m.InReplyTo != "" {
		fmt.Fprintf(&b, "In-Reply-To: <%s>\r\n", m.InReplyTo)
	}
	if len(m.References) > 0 {
		b.WriteString("References:")
		for _, r := range m.References {
			fmt.Fprintf(&b, " <%s>\r\n", r) // folded: one id per line
		}
	}
	b.WriteString("MIME-Version: 1.0\r\n")
	budget := m.Size - b.Len() - 400 // the MIME headers below
	attach := m.AttachmentBytes
	if m.Attachment && attach == 0 {
		budget /= 2
		attach = max(budget, 512) * 3 / 4
	}
	if attach > 0 {
		b.WriteString("Content-Type: multipart/mixed; boundary=\"=_mix\"\r\n\r\n--=_mix\r\n")
	}
	var quoted string // goes into both parts, like the new text
	if m.InReplyTo != "" {
		quoted = quote(rng, from.name, m.Date, min(400, budget/6))
	}
	text := paragraphs(rng, max((budget-2*len(quoted))/2, 64))
	if quoted != "" {
		text = append(text, quoted)
	}
	b.WriteString("Content-Type: multipart/alternative; boundary=\"=_alt\"\r\n\r\n")
	b.WriteString("--=_alt\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	for _, p := range text {
		b.WriteString(p)
		b.WriteString("\r\n")
	}
	b.WriteString("--=_alt\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	b.WriteString("<html><body>\r\n")
	for _, p := range text {
		b.WriteString("<p>")
		b.WriteString(p)
		b.WriteString("</p>\r\n")
	}
	b.WriteString("</body></html>\r\n--=_alt--\r\n")
	if attach > 0 {
		raw := make([]byte, attach)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("report-%d.pdf", rng.IntN(10000))
		fmt.Fprintf(&b, "--=_mix\r\nContent-Type: application/pdf; name=%q\r\n", name)
		fmt.Fprintf(&b, "Content-Disposition: attachment; filename=%q\r\nContent-Transfer-Encoding: base64\r\n\r\n", name)
		enc := base64.StdEncoding.EncodeToString(raw)
		for len(enc) > 76 {
			b.WriteString(enc[:76])
			b.WriteString("\r\n")
			enc = enc[76:]
		}
		b.WriteString(enc)
		b.WriteString("\r\n--=_mix--\r\n")
	}
	return b.Bytes()
}

func address(name, email string) string {
	if name == "" {
		return "<" + email + ">"
	}
	return mime.QEncoding.Encode("utf-8", name) + " <" + email + ">"
}

// paragraphs returns paragraphs of lines under 80 bytes, about n bytes in
// all. Every paragraph carries a reference number, a selective search term.
func paragraphs(rng *rand.Rand, n int) []string {
	var out []string
	var p, line bytes.Buffer
	total := 0
	for total < n {
		fmt.Fprintf(&line, "ref%d", rng.IntN(100000))
		for words := 20 + rng.IntN(40); words > 0 && total+p.Len()+line.Len() < n; words-- {
			w := word(rng)
			if line.Len()+len(w) >= 78 {
				p.Write(line.Bytes())
				p.WriteString("\r\n")
				line.Reset()
			} else {
				line.WriteByte(' ')
			}
			line.WriteString(w)
		}
		p.Write(line.Bytes())
		p.WriteString("\r\n")
		line.Reset()
		total += p.Len() + 2
		out = append(out, p.String())
		p.Reset()
	}
	return out
}

// quote is the quoted parent text under a reply, which the server's reply
// extraction strips.
func quote(rng *rand.Rand, name string, at time.Time, n int) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "On %s, %s wrote:\r\n", at.Add(-time.Hour).Format("Mon, 2 Jan 2006 15:04"), name)
	for _, p := range paragraphs(rng, n) {
		for _, l := range bytes.Split(bytes.TrimRight([]byte(p), "\r\n"), []byte("\r\n")) {
			fmt.Fprintf(&b, "> %s\r\n", l)
		}
	}
	return b.String()
}
