package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/inboxd/inboxd/message"
)

// benchText returns about n bytes of mail text in a few scripts, in lines.
func benchText(n int) string {
	var text strings.Builder
	words := strings.Fields("the meeting invoice order delivery report Rechnung Lieferung привет счёт 会議 請求書 budget quarterly")
	for i := 0; text.Len() < n; i++ {
		fmt.Fprintf(&text, "%s ref%d", words[i%len(words)], i*7919%100000)
		if i%11 == 10 {
			text.WriteString("\r\n")
		}
	}
	return text.String()
}

// benchRaw returns a multipart/alternative message whose text and HTML
// parts each hold textBytes of text, as bench/smtpload sends.
func benchRaw(headers string, textBytes int) string {
	text := benchText(textBytes)
	return headers + "MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + text + "\r\n" +
		"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>" + strings.ReplaceAll(text, "\r\n", "</p>\r\n<p>") + "</p>\r\n--b--\r\n"
}

// BenchmarkPackBody packs the body of a message with 30 KB of text and the
// same as HTML, as a 64 KB message of bench/smtpload carries.
func BenchmarkPackBody(b *testing.B) {
	m := message.Parse([]byte(benchRaw("Subject: pack\r\n", 30000)))
	bp := newBodyPacker()
	b.SetBytes(int64(len(m.Text) + len(m.HTML)))
	for b.Loop() {
		bp.pack(m)
	}
}
