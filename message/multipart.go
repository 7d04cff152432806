package message

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/emersion/go-message/textproto"
)

// errNoBoundary: the multipart body ended before any delimiter line.
var errNoBoundary = errors.New("no boundary delimiter found")

// multipartReader splits a multipart body (RFC 2046 §5.1.1) into parts. It
// is line based and lenient where go-message's textproto.MultipartReader is
// strict: part headers go through the same forgiving readHeader as the
// top-level header (so one malformed part header does not lose the parts
// after it), bare LF and CRLF may be mixed, and a missing final delimiter
// ends the last part with io.ErrUnexpectedEOF after all of its bytes.
type multipartReader struct {
	src       lineReader
	dash      []byte // "--" + boundary
	inPart    bool
	done      bool
	cur       *partReader
	partsSeen int
}

func newMultipartReader(br *bufio.Reader, boundary string) *multipartReader {
	return &multipartReader{
		src:  lineReader{br: br},
		dash: []byte("--" + boundary),
	}
}

// delimiter classifies a line: 1 for "--boundary", 2 for "--boundary--".
func (m *multipartReader) delimiter(line []byte) int {
	if !bytes.HasPrefix(line, m.dash) {
		return 0
	}
	rest := line[len(m.dash):]
	final := bytes.HasPrefix(rest, []byte("--"))
	if final {
		rest = rest[2:]
	}
	// Transport padding (RFC 2046 §5.1.1: LWSP before the CRLF) is allowed.
	rest = bytes.TrimRight(rest, " \t\r\n")
	if len(rest) != 0 {
		return 0
	}
	if final {
		return 2
	}
	return 1
}

// NextPart returns the next part's header and body. It returns io.EOF after
// the final delimiter or at the end of the input.
func (m *multipartReader) NextPart() (textproto.Header, io.Reader, error) {
	if m.cur != nil {
		if _, err := io.Copy(io.Discard, m.cur); err != nil {
			return textproto.Header{}, nil, err
		}
		m.cur = nil
	}
	if m.done {
		return textproto.Header{}, nil, io.EOF
	}
	if !m.inPart {
		// Skip the preamble.
		for {
			line, err := m.src.readLine(true)
			if len(line) > 0 {
				switch m.delimiter(line) {
				case 1:
					m.inPart = true
				case 2:
					m.done = true
					return textproto.Header{}, nil, io.EOF
				}
			}
			if m.inPart {
				break
			}
			if err != nil {
				m.done = true
				return textproto.Header{}, nil, errNoBoundary
			}
		}
	}
	h, rest, err := readHeader(&m.src, func(l []byte) bool { return m.delimiter(l) != 0 })
	if rest != nil {
		m.src.unread(rest)
	}
	m.partsSeen++
	m.cur = &partReader{m: m, atStart: true}
	return h, m.cur, err
}

// partReader yields one part's body: the bytes up to, not including, the
// line break before the next delimiter line.
type partReader struct {
	m       *multipartReader
	out     []byte
	off     int
	eol     []byte // line break held back until we know no delimiter follows
	atStart bool   // the next read starts a line
	err     error
}

func (p *partReader) Read(b []byte) (int, error) {
	for p.off >= len(p.out) {
		if p.err != nil {
			return 0, p.err
		}
		p.out, p.off = p.out[:0], 0
		line, err := p.m.src.readLine(false)
		if len(line) > 0 {
			if p.atStart {
				switch p.m.delimiter(line) {
				case 1:
					p.err = io.EOF
					return 0, io.EOF
				case 2:
					p.m.done = true
					p.err = io.EOF
					return 0, io.EOF
				}
			}
			p.out = append(p.out, p.eol...)
			p.eol = p.eol[:0]
			content := line
			switch {
			case bytes.HasSuffix(content, []byte("\r\n")):
				content = content[:len(content)-2]
				p.eol = append(p.eol, '\r', '\n')
				p.atStart = true
			case bytes.HasSuffix(content, []byte("\n")):
				content = content[:len(content)-1]
				p.eol = append(p.eol, '\n')
				p.atStart = true
			default:
				p.atStart = false // a fragment of a long line
			}
			p.out = append(p.out, content...)
		}
		if err != nil {
			// The input ended inside this part: no closing delimiter.
			p.out = append(p.out, p.eol...)
			p.eol = p.eol[:0]
			p.m.done = true
			p.err = io.ErrUnexpectedEOF
		}
	}
	n := copy(b, p.out[p.off:])
	p.off += n
	return n, nil
}

// lineReader reads lines from a bufio.Reader with one line of push-back.
type lineReader struct {
	br      *bufio.Reader
	pending []byte
	hasPend bool
}

func (l *lineReader) unread(line []byte) {
	l.pending, l.hasPend = line, true
}

// readLine returns the next line including its terminator. A line longer
// than the buffer comes back in pieces, which only matters for boundary
// detection: a piece that does not start a line is never a delimiter.
// The returned slice is valid until the next call unless copy is true.
func (l *lineReader) readLine(copyLine bool) ([]byte, error) {
	if l.hasPend {
		l.hasPend = false
		return l.pending, nil
	}
	line, err := l.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		err = nil
	}
	if copyLine {
		line = append([]byte(nil), line...)
	}
	return line, err
}
