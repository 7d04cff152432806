package message

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	gocharset "github.com/emersion/go-message/charset"
	htmlcharset "golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/charmap"
)

// decodeTransfer undoes the Content-Transfer-Encoding (RFC 2045 §6) of a
// part body. It keeps every byte it can decode; the error describes what was
// skipped or why the body may be incomplete.
func decodeTransfer(cte string, body io.Reader) ([]byte, error) {
	var data []byte
	err := decodeWith(cte, body, func(r io.Reader) (err error) {
		data, err = readAllChunked(r)
		return err
	})
	return data, err
}

// decodeTransferAppend is decodeTransfer appending the decoded bytes to
// dst, grown as needed: for a part whose bytes are read once and dropped
// (a text body becomes a string), into a buffer the parser reuses.
func decodeTransferAppend(dst []byte, cte string, body io.Reader) ([]byte, error) {
	err := decodeWith(cte, body, func(r io.Reader) (err error) {
		dst, err = readAppend(dst, r)
		return err
	})
	return dst, err
}

// readAppend appends r's bytes to dst until EOF, which is not an error.
func readAppend(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, max(4<<10, len(dst)))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// decodeTransferTo is decodeTransfer writing the decoded bytes to w as they
// are decoded.
func decodeTransferTo(w io.Writer, cte string, body io.Reader) error {
	return decodeWith(cte, body, func(r io.Reader) error {
		_, err := io.Copy(w, r)
		return err
	})
}

// decodeWith runs read over body with its transfer encoding undone.
func decodeWith(cte string, body io.Reader, read func(io.Reader) error) error {
	var r io.Reader
	var b64 *base64Reader
	var qp *qpReader
	var encErr error
	switch enc := strings.ToLower(strings.TrimSpace(cte)); enc {
	case "base64":
		b64 = newBase64Reader(body)
		r = b64
	case "quoted-printable":
		qp = newQPReader(body)
		r = qp
	case "", "7bit", "8bit", "binary":
		r = body
	case "7-bit", "8-bit", "8bits", "7bits", "none", "plain", "text", "ascii", "us-ascii", "utf-8", "utf8":
		// QUIRK: invented names for identity encodings.
		r = body
	default:
		// QUIRK: unknown transfer encodings (x-uuencode, typos): keep the
		// bytes as they are rather than drop the part.
		r = body
		encErr = fmt.Errorf("unknown transfer encoding %q, kept undecoded", cte)
	}
	if err := read(r); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		// A truncated multipart is reported by the multipart walker; other
		// read errors come from the decoders' sources.
		return err
	}
	switch {
	case b64 != nil && b64.junk:
		return errors.New("invalid base64 data skipped")
	case qp != nil && qp.bad:
		return errors.New("invalid quoted-printable kept literally")
	}
	return encErr
}

// readAllChunked reads r to EOF. It collects the data in growing chunks and
// copies it once into an exactly sized slice, so a 20 MB attachment costs
// about twice its size in allocations instead of io.ReadAll's repeated
// regrowth.
func readAllChunked(r io.Reader) ([]byte, error) {
	const minChunk, maxChunk = 4 << 10, 4 << 20
	var chunks [][]byte
	size := minChunk
	total := 0
	var err error
	for {
		buf := make([]byte, size)
		n := 0
		for n < len(buf) && err == nil {
			var m int
			m, err = r.Read(buf[n:])
			n += m
		}
		if n > 0 {
			chunks = append(chunks, buf[:n])
			total += n
		}
		if err != nil {
			break
		}
		if size < maxChunk {
			size *= 2
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	switch len(chunks) {
	case 0:
		return []byte{}, err
	case 1:
		return chunks[0], err
	}
	out := make([]byte, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	return out, err
}

// base64Reader decodes base64 (RFC 2045 §6.8) leniently: characters outside
// the alphabet are skipped (and remembered in junk), and padding in the
// middle of the data ends one quantum and starts the next.
type base64Reader struct {
	src  io.Reader
	buf  []byte
	out  []byte
	off  int
	q    [4]byte
	nq   int
	junk bool
	err  error
}

var b64Table = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// Decoders read their source through a buffer that starts small and grows
// while reads fill it: most parts are a few kilobytes, and a 32 KB buffer
// per part was a quarter of the bytes a send allocated.
const (
	minDecodeBuf = 4 << 10
	maxDecodeBuf = 32 << 10
)

// grow doubles buf, up to maxDecodeBuf, when the last read filled it.
func grow(buf []byte, n int) []byte {
	if n == len(buf) && len(buf) < maxDecodeBuf {
		return make([]byte, 2*len(buf))
	}
	return buf
}

func newBase64Reader(src io.Reader) *base64Reader {
	return &base64Reader{src: src, buf: make([]byte, minDecodeBuf)}
}

func (r *base64Reader) Read(p []byte) (int, error) {
	for r.off >= len(r.out) {
		if r.err != nil {
			return 0, r.err
		}
		r.out, r.off = r.out[:0], 0
		n, err := r.src.Read(r.buf)
		for _, c := range r.buf[:n] {
			v := b64Table[c]
			if v != 0xff {
				r.q[r.nq] = v
				r.nq++
				if r.nq == 4 {
					r.out = append(r.out, r.q[0]<<2|r.q[1]>>4, r.q[1]<<4|r.q[2]>>2, r.q[2]<<6|r.q[3])
					r.nq = 0
				}
				continue
			}
			switch c {
			case '=':
				r.flush()
			case ' ', '\t', '\r', '\n':
			default:
				// QUIRK: stray characters in base64 (mailer bugs, "-" from
				// URL-safe encoders, "*" line noise); skip and keep decoding.
				r.junk = true
			}
		}
		if err != nil {
			r.flush()
			r.err = err
		}
		r.buf = grow(r.buf, n)
	}
	n := copy(p, r.out[r.off:])
	r.off += n
	return n, nil
}

// flush emits the bytes of a partial quantum, as padding would have.
func (r *base64Reader) flush() {
	switch r.nq {
	case 1:
		r.junk = true // six bits cannot make a byte
	case 2:
		r.out = append(r.out, r.q[0]<<2|r.q[1]>>4)
	case 3:
		r.out = append(r.out, r.q[0]<<2|r.q[1]>>4, r.q[1]<<4|r.q[2]>>2)
	}
	r.nq = 0
}

// qpReader decodes quoted-printable (RFC 2045 §6.7) leniently: a malformed
// escape is kept as literal text instead of ending the body, as
// mime/quotedprintable would.
type qpReader struct {
	src     io.Reader
	buf     []byte
	pending []byte // undecoded bytes carried over (an incomplete line)
	scanned int    // bytes of pending already known to hold no '\n'
	out     []byte
	off     int
	bad     bool
	err     error
}

func newQPReader(src io.Reader) *qpReader {
	return &qpReader{src: src, buf: make([]byte, minDecodeBuf)}
}

func (r *qpReader) Read(p []byte) (int, error) {
	for r.off >= len(r.out) {
		if r.err != nil && len(r.pending) == 0 {
			return 0, r.err
		}
		r.out, r.off = r.out[:0], 0
		if r.err == nil {
			n, err := r.src.Read(r.buf)
			r.pending = append(r.pending, r.buf[:n]...)
			r.err = err
			r.buf = grow(r.buf, n)
		}
		// Search only the bytes not searched before: a body that is one long
		// line would otherwise be rescanned on every read, quadratically.
		for {
			i := bytes.IndexByte(r.pending[r.scanned:], '\n')
			if i < 0 {
				r.scanned = len(r.pending)
				break
			}
			end := r.scanned + i + 1
			r.decodeLine(r.pending[:end])
			r.pending = r.pending[end:]
			r.scanned = 0
		}
		if r.err != nil && len(r.pending) > 0 {
			r.decodeLine(r.pending)
			r.pending = nil
		}
		if len(r.pending) == 0 {
			r.pending = r.pending[:0:0]
			r.scanned = 0
		}
	}
	n := copy(p, r.out[r.off:])
	r.off += n
	return n, nil
}

func (r *qpReader) decodeLine(line []byte) {
	eol := ""
	switch {
	case bytes.HasSuffix(line, []byte("\r\n")):
		eol, line = "\r\n", line[:len(line)-2]
	case bytes.HasSuffix(line, []byte("\n")):
		// QUIRK: bare LF line endings.
		eol, line = "\n", line[:len(line)-1]
	}
	// RFC 2045 §6.7 rule 3: trailing whitespace is transport padding.
	line = bytes.TrimRight(line, " \t")
	soft := false
	if bytes.HasSuffix(line, []byte("=")) {
		soft, line = true, line[:len(line)-1]
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '=' {
			if i+2 < len(line) && isHex(line[i+1]) && isHex(line[i+2]) {
				r.out = append(r.out, unhex(line[i+1])<<4|unhex(line[i+2]))
				i += 2
				continue
			}
			// QUIRK: "=" not followed by two hex digits (unencoded
			// "a=b" from broken encoders): keep it literally.
			r.bad = true
		}
		r.out = append(r.out, c)
	}
	if !soft {
		r.out = append(r.out, eol...)
	}
}

// toUTF8 converts text in the named charset to UTF-8. It never fails: an
// unknown or lying charset falls back to fixUTF8, which keeps valid UTF-8 and
// reads other bytes as Windows-1252, so no byte of the body is lost.
func toUTF8(b []byte, charset string, html bool) string {
	cs := charsetName(charset)
	if readAsUTF8(cs) {
		if cs == "" && html && !utf8.Valid(b) {
			// QUIRK: HTML without a charset parameter often declares it in
			// a <meta> tag instead.
			if enc, name, _ := htmlcharset.DetermineEncoding(b, "text/html"); enc != nil && name != "utf-8" {
				if out, err := enc.NewDecoder().Bytes(b); err == nil {
					return fixUTF8(string(out))
				}
			}
		}
		return fixUTF8(string(b))
	}
	r, err := gocharset.Reader(cs, bytes.NewReader(b))
	if err != nil {
		// QUIRK: unknown or misspelt charset names.
		return fixUTF8(string(b))
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return fixUTF8(string(b))
	}
	return fixUTF8(string(out))
}

// charsetName is a charset parameter as toUTF8 looks it up.
func charsetName(charset string) string {
	return strings.ToLower(strings.Trim(strings.TrimSpace(charset), `"'`))
}

// readAsUTF8 reports whether toUTF8 reads text of charset cs (a
// charsetName) as UTF-8, repairing what is not.
func readAsUTF8(cs string) bool {
	switch cs {
	case "", "utf-8", "utf8", "us-ascii", "ascii", "x-unknown", "unknown", "unknown-8bit", "x-user-defined", "default", "8bit":
		return true
	}
	return false
}

// bodyText is normalizeNewlines(toUTF8(b, charset, html)) for a body part.
// Most bodies are valid UTF-8 (or ASCII) as declared; theirs is made in
// one copy, CRLF turned to LF on the way, instead of a string conversion
// and a ReplaceAll of a body-sized string.
func bodyText(b []byte, charset string, html bool) string {
	if readAsUTF8(charsetName(charset)) && utf8.Valid(b) {
		return stringLF(b)
	}
	return normalizeNewlines(toUTF8(b, charset, html))
}

// stringLF is string(b) with every CRLF replaced by LF.
func stringLF(b []byte) string {
	i := bytes.Index(b, crlf)
	if i < 0 {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) - 1)
	for i >= 0 {
		sb.Write(b[:i])
		sb.WriteByte('\n')
		b = b[i+2:]
		i = bytes.Index(b, crlf)
	}
	sb.Write(b)
	return sb.String()
}

var crlf = []byte("\r\n")

// fixUTF8 returns s unchanged when it is valid UTF-8 (RFC 6532 headers,
// modern bodies); otherwise each invalid byte is read as Windows-1252, the
// most common source of undeclared 8-bit text, so nothing is replaced by
// U+FFFD.
func fixUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s) + len(s)/4)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			sb.WriteRune(charmap.Windows1252.DecodeByte(s[i]))
			i++
			continue
		}
		sb.WriteString(s[i : i+size])
		i += size
	}
	return sb.String()
}
