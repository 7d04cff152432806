package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/flate"

	"github.com/inboxd/inboxd/message"
)

// A message's text, html and extracted_text are stored packed in
// bodies.packed: the three together are about as large as the raw message
// (html repeats the text with markup, extracted_text is most of the text),
// and one deflate stream over all three stores them in a fifth of that.
// That is what keeps a stored message under 3× its raw size (issue 7).
// The raw bytes stay as they are: they are served byte for byte and
// streamed in chunks.
//
// Layout (all lengths in bytes of the UTF-8 text):
//
//	byte     format, packFormat
//	byte     flags: packHasText, packHasHTML, packExtractedPrefix
//	uvarint  len(text), len(html), len(extracted_text)
//	…        deflate(text ‖ html ‖ extracted_text), where extracted_text is
//	         left out when it is the first len(extracted_text) bytes of
//	         text (ExtractReply mostly cuts history off the end)
//
// Rows written before migration 0007 have packed NULL and the three plain
// columns set; GetBody reads both.
const (
	packFormat = 1

	packHasText         = 1 << 0
	packHasHTML         = 1 << 1
	packExtractedPrefix = 1 << 2
)

// bodyPacker packs and unpacks bodies. A new deflate writer costs more
// than a megabyte and half a millisecond, so writers and readers are kept
// for reuse in bounded free lists (a sync.Pool may drop them at any GC,
// and ingest runs one every few hundred messages). The zero value works
// and reuses nothing.
type bodyPacker struct {
	writers chan *flate.Writer
	readers chan io.ReadCloser // each also a flate.Resetter
}

// packerFree is how many idle writers and readers are kept: enough for
// the SMTP sessions that pack at the same time on a few cores.
const packerFree = 16

func newBodyPacker() bodyPacker {
	return bodyPacker{writers: make(chan *flate.Writer, packerFree), readers: make(chan io.ReadCloser, packerFree)}
}

// pack returns the packed body of a parsed message. It runs in the
// caller's goroutine (prepare), not in the single writer.
func (bp *bodyPacker) pack(m *message.Parsed) []byte {
	var flags byte
	if m.HasText {
		flags |= packHasText
	}
	if m.HasHTML {
		flags |= packHasHTML
	}
	if m.HasText && strings.HasPrefix(m.Text, m.ExtractedText) {
		flags |= packExtractedPrefix
	}
	out := make([]byte, 0, 2+3*binary.MaxVarintLen64+(len(m.Text)+len(m.HTML))/3)
	out = append(out, packFormat, flags)
	out = binary.AppendUvarint(out, uint64(len(m.Text)))
	out = binary.AppendUvarint(out, uint64(len(m.HTML)))
	out = binary.AppendUvarint(out, uint64(len(m.ExtractedText)))
	buf := bytes.NewBuffer(out)
	var w *flate.Writer
	select {
	case w = <-bp.writers:
		w.Reset(buf)
	default:
		w, _ = flate.NewWriter(buf, flate.BestSpeed) // cannot fail for a valid level
	}
	// Writes to a bytes.Buffer do not fail.
	io.WriteString(w, m.Text)
	io.WriteString(w, m.HTML)
	if flags&packExtractedPrefix == 0 {
		io.WriteString(w, m.ExtractedText)
	}
	w.Close()
	select {
	case bp.writers <- w:
	default:
	}
	return buf.Bytes()
}

var errBadPack = errors.New("malformed packed body")

// maxPackedPart bounds each stated length of a packed body, far above any
// message inboxd accepts.
const maxPackedPart = 1 << 32

// unpack is the inverse of pack.
func (bp *bodyPacker) unpack(packed []byte) (Body, error) {
	if len(packed) < 2 || packed[0] != packFormat {
		return Body{}, errBadPack
	}
	flags := packed[1]
	rest := packed[2:]
	var lens [3]uint64
	for i := range lens {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return Body{}, errBadPack
		}
		if v > maxPackedPart { // also keeps the sums below from overflowing
			return Body{}, errBadPack
		}
		lens[i], rest = v, rest[n:]
	}
	total := lens[0] + lens[1]
	if flags&packExtractedPrefix == 0 {
		total += lens[2]
	} else if lens[2] > lens[0] {
		return Body{}, errBadPack
	}
	src := bytes.NewReader(rest)
	var r io.ReadCloser
	select {
	case r = <-bp.readers:
		r.(flate.Resetter).Reset(src, nil) // fails only for a bad dictionary
	default:
		r = flate.NewReader(src)
	}
	defer func() {
		select {
		case bp.readers <- r:
		default:
		}
	}()
	// Read through a limit rather than into a buffer of the stated size, so
	// a damaged length cannot ask for gigabytes.
	var data bytes.Buffer
	data.Grow(int(min(total, 1<<20)) + bytes.MinRead) // ReadFrom wants MinRead spare to see EOF
	if _, err := data.ReadFrom(io.LimitReader(r, int64(total)+1)); err != nil {
		return Body{}, fmt.Errorf("%w: %w", errBadPack, err)
	}
	if uint64(data.Len()) != total {
		return Body{}, errBadPack
	}
	all := data.String()
	text, html := all[:lens[0]], all[lens[0]:lens[0]+lens[1]]
	b := Body{ExtractedText: all[lens[0]+lens[1]:]}
	if flags&packExtractedPrefix != 0 {
		b.ExtractedText = text[:lens[2]]
	}
	if flags&packHasText != 0 {
		b.Text = &text
	}
	if flags&packHasHTML != 0 {
		b.HTML = &html
	}
	return b, nil
}
