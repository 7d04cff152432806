package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/s2"

	"github.com/inboxd/inboxd/message"
)

// A message's text, html and extracted_text are stored packed in
// contents.body: the three together are about as large as the raw message
// (html repeats the text with markup, extracted_text is most of the text),
// and one compressed stream over all three stores them in a quarter of
// that. That is what keeps a stored message under 3× its raw size (issue
// 7). The raw bytes are stored apart, in contents.data (raw.go).
//
// Layout (all lengths in bytes of the UTF-8 text):
//
//	byte     format: packS2, or packDeflate in rows written before it
//	byte     flags: packHasText, packHasHTML, packExtractedPrefix
//	uvarint  len(text), len(html), len(extracted_text)
//	…        the stream of text ‖ html ‖ extracted_text, where
//	         extracted_text is left out when it is the first
//	         len(extracted_text) bytes of text (ExtractReply mostly cuts
//	         history off the end)
//
// Rows written before migration 0007 had the three plain; migration 0014
// packed them.
//
// The stream is S2's framed format (github.com/klauspost/compress/s2) in
// blocks of packBlock. It was deflate (level 1) until issue 18: packing a
// 64 KB message's body took 325 µs of its 4.2 ms of server CPU, S2 takes
// a quarter of that, for bodies about 1.5–2× deflate's size. Rows keep
// the format they were written in; both are read.
const (
	packDeflate = 1
	packS2      = 2

	packHasText         = 1 << 0
	packHasHTML         = 1 << 1
	packExtractedPrefix = 1 << 2

	// packBlock is the S2 block size: each writer and reader holds about
	// two blocks of buffers. Bodies are mostly smaller than a block.
	packBlock = 64 << 10
)

// bodyPacker packs and unpacks bodies. Writers and readers are kept for
// reuse in bounded free lists (a sync.Pool may drop them at any GC, and
// ingest runs one every few hundred messages): each holds buffers of a
// block or more. The zero value works and reuses nothing.
type bodyPacker struct {
	writers   chan *packWriter
	readers   chan *s2.Reader
	inflaters chan io.ReadCloser // each also a flate.Resetter
}

// packerFree is how many idle writers and readers are kept: enough for
// the SMTP sessions that pack at the same time on a few cores.
const packerFree = 16

func newBodyPacker() bodyPacker {
	return bodyPacker{writers: make(chan *packWriter, packerFree), readers: make(chan *s2.Reader, packerFree),
		inflaters: make(chan io.ReadCloser, packerFree)}
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
	out := make([]byte, 0, 2+3*binary.MaxVarintLen64+(len(m.Text)+len(m.HTML))/2)
	out = append(out, packS2, flags)
	out = binary.AppendUvarint(out, uint64(len(m.Text)))
	out = binary.AppendUvarint(out, uint64(len(m.HTML)))
	out = binary.AppendUvarint(out, uint64(len(m.ExtractedText)))
	buf := bytes.NewBuffer(out)
	var w *packWriter
	select {
	case w = <-bp.writers:
		w.Reset(buf)
	default:
		w = &packWriter{Writer: s2.NewWriter(buf, s2.WriterConcurrency(1), s2.WriterBlockSize(packBlock))}
	}
	// Writes to a bytes.Buffer do not fail.
	w.writeString(m.Text)
	w.writeString(m.HTML)
	if flags&packExtractedPrefix == 0 {
		w.writeString(m.ExtractedText)
	}
	w.Close()
	w.Reset(nil) // an idle writer must not hold on to buf
	select {
	case bp.writers <- w:
	default:
	}
	return buf.Bytes()
}

// packWriter is an S2 writer with a buffer to feed it strings through:
// io.WriteString would copy each whole text into a new []byte.
type packWriter struct {
	*s2.Writer
	buf [8 << 10]byte
}

func (w *packWriter) writeString(s string) {
	for len(s) > 0 {
		n := copy(w.buf[:], s)
		w.Write(w.buf[:n])
		s = s[n:]
	}
}

var errBadPack = errors.New("malformed packed body")

// maxPackedPart bounds each stated length of a packed body, far above any
// message inboxd accepts.
const maxPackedPart = 1 << 32

// packHeader is a packed body's layout: its format and flags, the three
// lengths and the compressed stream.
type packHeader struct {
	format byte
	flags  byte
	lens   [3]uint64 // text, html, extracted_text
	stream []byte
}

// streamLen is how many bytes the stream decompresses to.
func (h *packHeader) streamLen() uint64 {
	if h.flags&packExtractedPrefix != 0 {
		return h.lens[0] + h.lens[1]
	}
	return h.lens[0] + h.lens[1] + h.lens[2]
}

func parsePacked(packed []byte) (packHeader, error) {
	if len(packed) < 2 || packed[0] != packS2 && packed[0] != packDeflate {
		return packHeader{}, errBadPack
	}
	h := packHeader{format: packed[0], flags: packed[1]}
	rest := packed[2:]
	for i := range h.lens {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return packHeader{}, errBadPack
		}
		if v > maxPackedPart { // also keeps the sums below from overflowing
			return packHeader{}, errBadPack
		}
		h.lens[i], rest = v, rest[n:]
	}
	if h.flags&packExtractedPrefix != 0 && h.lens[2] > h.lens[0] {
		return packHeader{}, errBadPack
	}
	h.stream = rest
	return h, nil
}

// reader returns a decompressor of src, a stream in format, reused when
// one is free.
func (bp *bodyPacker) reader(format byte, src io.Reader) io.Reader {
	if format == packDeflate {
		select {
		case r := <-bp.inflaters:
			r.(flate.Resetter).Reset(src, nil) // fails only for a bad dictionary
			return r
		default:
			return flate.NewReader(src)
		}
	}
	select {
	case r := <-bp.readers:
		r.Reset(src)
		return r
	default:
		return s2.NewReader(src, s2.ReaderMaxBlockSize(packBlock))
	}
}

// release keeps r, from reader, for reuse if there is room, reset first:
// an idle reader must not hold on to its last input (a piece, or a whole
// packed body) while it waits.
func (bp *bodyPacker) release(r io.Reader) {
	switch r := r.(type) {
	case *s2.Reader:
		r.Reset(nil)
		select {
		case bp.readers <- r:
		default:
		}
	case io.ReadCloser:
		r.(flate.Resetter).Reset(strings.NewReader(""), nil)
		select {
		case bp.inflaters <- r:
		default:
		}
	}
}

// unpack is the inverse of pack.
func (bp *bodyPacker) unpack(packed []byte) (Body, error) {
	h, err := parsePacked(packed)
	if err != nil {
		return Body{}, err
	}
	total := h.streamLen()
	r := bp.reader(h.format, bytes.NewReader(h.stream))
	defer bp.release(r)
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
	text, html := all[:h.lens[0]], all[h.lens[0]:h.lens[0]+h.lens[1]]
	b := Body{ExtractedText: all[h.lens[0]+h.lens[1]:]}
	if h.flags&packExtractedPrefix != 0 {
		b.ExtractedText = text[:h.lens[2]]
	}
	if h.flags&packHasText != 0 {
		b.Text = &text
	}
	if h.flags&packHasHTML != 0 {
		b.HTML = &html
	}
	return b, nil
}

// BodyParts is a stored body to be read part by part (OpenBody). Each part
// is decompressed from the packed body again when it is opened, as far as
// that part reaches, and a large packed body is read from the database in
// pieces (of blobChunk, or an eighth of the body: bodyPieces) as the
// decompressor needs them; the driver has no incremental blob I/O. So a
// reader holds a piece and a decompressor, never the text nor the whole
// packed body: a 19 MB text packs to some 8 MB, and the body route served
// a dozen readers of it at once with 150 MB each when it unpacked it
// (issue 13).
type BodyParts struct {
	Text, HTML    *BodyPart // nil when the message has no such part
	ExtractedText BodyPart
}

// BodyPart is one part of a stored body.
type BodyPart struct {
	src      *packedStream // nil in the zero BodyPart
	off, len uint64        // of the part in the decompressed stream
}

// packedStream is where a packed body's stream is read from: the
// bytes read with the row when the body is small (almost all are), or
// else contents.body from start to end, piece by piece.
type packedStream struct {
	bp         *bodyPacker
	format     byte
	data       []byte
	db         *DB // nil when data holds the stream
	messageID  string
	start, end int64
	piece      int64
}

// bodyPieces is how many pieces a large packed body is read in, at most,
// per pass. SQLite reads all of a blob to take a substr of it, so each
// piece costs a read of the whole: more pieces would hold less memory and
// cost more (a read of 8 MB in 1 MB pieces is 64 MB read).
const bodyPieces = 8

// Open returns a reader of the part's text (UTF-8); it reads the database
// with ctx. A damaged or vanished body is an error from Read, never a
// short text. Close it: it holds a decompressor.
func (p *BodyPart) Open(ctx context.Context) io.ReadCloser {
	if p.src == nil || p.len == 0 {
		return io.NopCloser(strings.NewReader(""))
	}
	var src io.Reader = bytes.NewReader(p.src.data)
	if p.src.db != nil {
		src = &pieceReader{ctx: ctx, s: p.src, off: p.src.start}
	}
	return &partReader{bp: p.src.bp, r: p.src.bp.reader(p.src.format, src), skip: p.off, left: p.len}
}

type partReader struct {
	bp         *bodyPacker
	r          io.Reader // nil once closed
	skip, left uint64
}

func (pr *partReader) Read(b []byte) (int, error) {
	if pr.r == nil {
		return 0, errors.New("read of a closed body part")
	}
	if pr.skip > 0 {
		// The parts before this one are decompressed and dropped: the
		// stream has no index to seek by.
		n, err := io.CopyN(io.Discard, pr.r, int64(pr.skip))
		pr.skip -= uint64(n)
		if err != nil {
			return 0, damaged(err)
		}
	}
	if pr.left == 0 {
		return 0, io.EOF
	}
	if uint64(len(b)) > pr.left {
		b = b[:pr.left]
	}
	n, err := pr.r.Read(b)
	pr.left -= uint64(n)
	switch {
	case err == io.EOF && pr.left > 0:
		return n, damaged(io.ErrUnexpectedEOF)
	case err == io.EOF:
		return n, nil // the next Read answers io.EOF
	case err != nil:
		return n, damaged(err)
	}
	return n, nil
}

// damaged marks a read error of a packed body, unless it is the
// database's (a piece that could not be read).
func damaged(err error) error {
	var pe *pieceError
	if errors.As(err, &pe) {
		return pe.err
	}
	return fmt.Errorf("%w: %w", errBadPack, err)
}

func (pr *partReader) Close() error {
	if pr.r != nil {
		pr.bp.release(pr.r)
		pr.r = nil
	}
	return nil
}

// pieceReader reads contents.body from off to s.end, a piece at a time.
// Pieces are separate queries, not one transaction: a slow client must
// not hold a read connection, and a stored body never changes (a message
// deleted meanwhile is an error).
type pieceReader struct {
	ctx   context.Context
	s     *packedStream
	off   int64
	piece []byte
}

// pieceError carries a failure to read a piece through the decompressor.
type pieceError struct{ err error }

func (e *pieceError) Error() string { return e.err.Error() }

const sqlBodyPiece = `SELECT substr(c.body, ?, ?) FROM messages m JOIN contents c ON c.message = m.pk WHERE m.id = ?`

func (r *pieceReader) fill() error {
	if r.off >= r.s.end {
		return io.EOF
	}
	n := min(r.s.piece, r.s.end-r.off)
	err := r.s.db.r.QueryRowContext(r.ctx, sqlBodyPiece, r.off+1, n, r.s.messageID).Scan(&r.piece)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err == nil && int64(len(r.piece)) != n {
		err = errBadPack
	}
	if err != nil {
		return &pieceError{fmt.Errorf("body %s at %d: %w", r.s.messageID, r.off, err)}
	}
	r.off += n
	return nil
}

func (r *pieceReader) Read(p []byte) (int, error) {
	if len(r.piece) == 0 {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.piece)
	r.piece = r.piece[n:]
	return n, nil
}

// ReadByte spares the decompressor a bufio.Reader of its own.
func (r *pieceReader) ReadByte() (byte, error) {
	if len(r.piece) == 0 {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	c := r.piece[0]
	r.piece = r.piece[1:]
	return c, nil
}

// maxPackHeader is the longest header of a packed body.
const maxPackHeader = 2 + 3*binary.MaxVarintLen64

// A body: its length, and the packed body itself when it is at most
// blobChunk, else its header. NULL: the message has no body.
const sqlOpenBody = `SELECT length(c.body), CASE WHEN length(c.body) <= ? THEN c.body ELSE substr(c.body, 1, ?) END
	FROM messages m JOIN contents c ON c.message = m.pk WHERE m.id = ?`

// OpenBody returns a message's parsed body to be read part by part,
// without unpacking it whole (see BodyParts).
func (db *DB) OpenBody(ctx context.Context, messageID string) (BodyParts, error) {
	var size sql.NullInt64
	var packed []byte
	err := db.r.QueryRowContext(ctx, sqlOpenBody, blobChunk, maxPackHeader, messageID).Scan(&size, &packed)
	if err == nil && !size.Valid {
		err = sql.ErrNoRows
	}
	if errors.Is(err, sql.ErrNoRows) {
		return BodyParts{}, fmt.Errorf("body %s: %w", messageID, ErrNotFound)
	}
	if err != nil {
		return BodyParts{}, fmt.Errorf("body: %w", err)
	}
	return db.openedBody(messageID, size.Int64, packed)
}

// sqlOpenBodies is sqlOpenBody for a JSON list of message ids.
const sqlOpenBodies = `SELECT m.id, length(c.body), CASE WHEN length(c.body) <= ? THEN c.body ELSE substr(c.body, 1, ?) END
	FROM messages m JOIN contents c ON c.message = m.pk
	WHERE m.id IN (SELECT value FROM json_each(?)) AND c.body IS NOT NULL`

// OpenBodies is OpenBody for several messages in one query (a page of a
// thread read with its bodies), by message id; a message without a body
// is ErrNotFound.
func (db *DB) OpenBodies(ctx context.Context, messageIDs []string) (map[string]BodyParts, error) {
	out := make(map[string]BodyParts, len(messageIDs))
	if len(messageIDs) == 0 {
		return out, nil
	}
	rows, err := db.readQuery(ctx, sqlOpenBodies, blobChunk, maxPackHeader, stringsJSON(messageIDs))
	if err != nil {
		return nil, fmt.Errorf("bodies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var size int64
		var packed []byte
		if err := rows.Scan(&id, &size, &packed); err != nil {
			return nil, fmt.Errorf("bodies: %w", err)
		}
		if out[id], err = db.openedBody(id, size, packed); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("bodies: %w", err)
	}
	for _, id := range messageIDs {
		if _, ok := out[id]; !ok {
			return nil, fmt.Errorf("body %s: %w", id, ErrNotFound)
		}
	}
	return out, nil
}

// openedBody is the BodyParts of a row of sqlOpenBody.
func (db *DB) openedBody(messageID string, size int64, packed []byte) (BodyParts, error) {
	h, err := parsePacked(packed)
	if err != nil {
		return BodyParts{}, fmt.Errorf("body %s: %w", messageID, err)
	}
	src := &packedStream{bp: &db.bodies, format: h.format, data: h.stream}
	if size > int64(len(packed)) {
		src = &packedStream{bp: &db.bodies, format: h.format, db: db, messageID: messageID, start: int64(len(packed) - len(h.stream)), end: size,
			piece: max(blobChunk, (size+bodyPieces-1)/bodyPieces)}
	}
	part := func(off, n uint64) BodyPart { return BodyPart{src: src, off: off, len: n} }
	text0, html0 := part(0, h.lens[0]), part(h.lens[0], h.lens[1])
	b := BodyParts{ExtractedText: part(h.lens[0]+h.lens[1], h.lens[2])}
	if h.flags&packExtractedPrefix != 0 {
		b.ExtractedText = part(0, h.lens[2])
	}
	if h.flags&packHasText != 0 {
		b.Text = &text0
	}
	if h.flags&packHasHTML != 0 {
		b.HTML = &html0
	}
	return b, nil
}
