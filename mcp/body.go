package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/inboxd/inboxd/app"
)

// escapedLen is the size of r inside a JSON string, as encode writes it.
func escapedLen(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029':
		return 6
	}
	return 1
}

// errFull stops a body's copy once the chunk has all it can hold.
var errFull = errors.New("mcp: chunk full")

// chunk is a piece of a body: the characters from offset on that fit.
type chunk struct {
	text      string
	offset    int  // of its first character in the body, in characters (code points)
	chars     int  // how many it holds
	escaped   int  // its size inside a JSON string
	truncated bool // the body goes on after it
}

// collector keeps, of what is written to it, the characters after the
// first skip while they fit: each takes its JSON-escaped size from
// jsonRoom and one from textRoom. The first one that does not fit ends
// the write with errFull.
type collector struct {
	skip               int
	jsonRoom, textRoom int
	b                  strings.Builder
	n, escaped         int
	partial            []byte // the start of a character split between two writes
	truncated          bool
}

func (c *collector) Write(p []byte) (int, error) {
	if c.truncated {
		return 0, errFull
	}
	data := p
	if len(c.partial) > 0 {
		data = append(c.partial, p...)
		c.partial = nil
	}
	for len(data) > 0 {
		r, size := rune(data[0]), 1
		if r >= utf8.RuneSelf {
			if !utf8.FullRune(data) {
				c.partial = append([]byte(nil), data...)
				break
			}
			r, size = utf8.DecodeRune(data)
		}
		data = data[size:]
		if c.skip > 0 {
			c.skip--
			continue
		}
		w := escapedLen(r)
		if w > c.jsonRoom || c.textRoom < 1 {
			c.truncated = true
			return len(p), errFull
		}
		c.jsonRoom -= w
		c.textRoom--
		c.escaped += w
		if r < utf8.RuneSelf {
			c.b.WriteByte(byte(r))
		} else {
			c.b.WriteRune(r)
		}
		c.n++
	}
	return len(p), nil
}

// readChunk reads the characters of one form of a body from offset on, as
// many as fit the rooms; ok is false when the message has no such form.
func readChunk(ctx context.Context, b app.BodyParts, form string, offset, jsonRoom, textRoom int) (ch chunk, ok bool, err error) {
	c := &collector{skip: offset, jsonRoom: max(jsonRoom, 0), textRoom: max(textRoom, 0)}
	ok, err = app.WriteBodyPart(ctx, c, b, form)
	if errors.Is(err, errFull) {
		err = nil
	}
	if err != nil {
		return chunk{}, false, err
	}
	if ok && c.skip > 0 {
		// Not an empty piece: a caller that passes an offset it made up
		// learns so, rather than that the body is empty from there.
		return chunk{}, ok, app.Invalidf("offset", "offset %d is past the end of the %s body (%d characters).", offset, form, offset-c.skip)
	}
	if len(c.partial) > 0 && !c.truncated && c.skip == 0 {
		// A body that ends inside a character: what json.Marshal makes of
		// it, one replacement character.
		c.truncated = c.jsonRoom < 1 || c.textRoom < 1
		if !c.truncated {
			c.b.WriteRune(utf8.RuneError)
			c.n++
			c.escaped++
		}
	}
	return chunk{text: c.b.String(), offset: offset, chars: c.n, escaped: c.escaped, truncated: c.truncated}, ok, nil
}

// bodyJSON is a piece of a message's body.
type bodyJSON struct {
	Form       string `json:"form" jsonschema:"extracted (the new text of the message, quoted replies left out), text (the text/plain part) or html (the text/html part, sanitized)"`
	Available  bool   `json:"available" jsonschema:"false when the message has no part of this form (try another)"`
	Text       string `json:"text" jsonschema:"the characters from offset on that fit this result, fenced"`
	Offset     int    `json:"offset" jsonschema:"of the first character shown, in characters (Unicode code points) from the start"`
	Chars      int    `json:"chars" jsonschema:"how many characters are shown"`
	Truncated  bool   `json:"truncated" jsonschema:"the body goes on after what is shown"`
	NextOffset *int   `json:"next_offset" jsonschema:"when truncated: the offset to pass to get_message for the rest; else null"`
}

// bodiedMessageJSON is a message's metadata with (a piece of) its body.
type bodiedMessageJSON struct {
	messageJSON
	Body bodyJSON `json:"body"`
}

// placeholder stands for an offset or count in an upper bound of a size:
// no body has more characters than it has digits for.
const placeholder = 9999999999

func bodyObject(ch chunk, form string, available bool, f *fence) bodyJSON {
	b := bodyJSON{Form: form, Available: available, Offset: ch.offset, Chars: ch.chars, Truncated: ch.truncated}
	if ch.text != "" {
		f.check(ch.text)
		b.Text = f.open + ch.text + f.close
	}
	if ch.truncated {
		next := ch.offset + ch.chars
		b.NextOffset = &next
	}
	return b
}

// writeBodyText writes a body as the text rendering shows it.
func writeBodyText(b *strings.Builder, o bodyJSON, messageID string, f *fence) {
	if !o.Available {
		fmt.Fprintf(b, "Body: this message has no %s form; try body %q or %q.\n", o.Form, app.BodyText, app.BodyHTML)
		return
	}
	fmt.Fprintf(b, "Body (%s, characters %d to %d", o.Form, o.Offset, o.Offset+o.Chars)
	if o.Truncated {
		fmt.Fprintf(b, "; it goes on: call get_message with message_id %q", messageID)
		if o.Form != app.BodyExtracted {
			// The form is named unless it is get_message's default: the
			// offset counts in this form's characters.
			fmt.Fprintf(b, ", body %q", o.Form)
		}
		fmt.Fprintf(b, " and offset %d for the rest", *o.NextOffset)
	} else {
		b.WriteString(", the end")
	}
	b.WriteString("):\n")
	if o.Text != "" {
		// The fenced text, with the markers on lines of their own.
		b.WriteString(f.open + "\n" + strings.TrimSuffix(strings.TrimPrefix(o.Text, f.open), f.close) + "\n" + f.close + "\n")
	}
}

// space is what a result being fitted to a limit has used of it, in
// each of its renderings.
type space struct {
	limit      int
	json, text int
}

func (s *space) fits(json, text int) bool { return s.json+json <= s.limit && s.text+text <= s.limit }

func (s *space) take(json, text int) { s.json += json; s.text += text }

func runes(s string) int { return utf8.RuneCountInString(s) }

// bodied is one message to render with its body.
type bodied struct {
	m      app.Message
	env    string // the inbox's environment
	atts   []app.Attachment
	dels   []app.DeliveryStatus
	body   app.BodyParts
	offset int
}

// bodiedBounds renders b's metadata (strings cut to n, lists to most)
// and bounds what b takes of a result with its body at its widest.
func bodiedBounds(b bodied, f *fence, n, most int, widest bodyJSON, jsonExtra, fenceLen int) (meta messageJSON, metaText string, jsonBound, textBound int, err error) {
	meta = messageObject(b.m, b.env, b.atts, b.dels, f, n, most)
	meta.MetadataCut = meta.MetadataCut || n > 0 // strings cut: said in the object and its text
	j, err := encode(meta)
	if err != nil {
		return meta, "", 0, 0, err
	}
	var tb strings.Builder
	writeMessageText(&tb, meta)
	metaText = tb.String()
	tb.Reset()
	writeBodyText(&tb, widest, b.m.ID, f)
	return meta, metaText, utf8.RuneCount(j) + jsonExtra, runes(metaText) + runes(tb.String()) + fenceLen + 3, nil
}

// fitBodied renders messages with their bodies (form) into the space
// left: each whole while it fits; the first whose body does not fit is
// cut where it must (truncated, next_offset) and ends the list; one
// whose metadata does not fit ends the list before it. It answers the
// objects and their text blocks, as many as fit; the caller knows, from
// how many, where its list stopped. The first message must fit, or the
// call is tooLarge, unless no result could hold its metadata whole:
// then it is shown cut (compactCut, compactMost). most cuts each address
// list and the attachments (0: whole).
func fitBodied(ctx context.Context, sp *space, f *fence, form string, most int, msgs []bodied, narrower func(app.Message) string) ([]bodiedMessageJSON, []string, error) {
	out := []bodiedMessageJSON{}
	var texts []string
	// Upper bounds of a message's size, without its body's characters:
	// its metadata as it is, its body's other fields at their widest. The
	// space is charged the bounds (and the body's characters): the result
	// is encoded once, at the end.
	fenceLen := runes(f.open) + runes(f.close)
	next := placeholder
	widest := bodyJSON{Form: form, Available: true, Offset: placeholder, Chars: placeholder, Truncated: true, NextOffset: &next}
	wb, err := encode(widest)
	if err != nil {
		return nil, nil, err
	}
	bodyBound := utf8.RuneCount(wb) + len(`,"body":`) + fenceLen
	for i, b := range msgs {
		sep := 0
		if i > 0 {
			sep = 1 // the comma in the JSON list
		}
		meta, metaText, jsonBound, textBound, err := bodiedBounds(b, f, 0, most, widest, bodyBound+sep, fenceLen)
		if err != nil {
			return nil, nil, err
		}
		if i == 0 && !sp.fits(jsonBound, textBound) && (sp.limit >= HardMaxChars || max(jsonBound, textBound) > HardMaxChars) {
			// No result can hold it whole: cut, so that the call (and
			// wait_for_message's cursor) gets past it. One that a larger
			// max_chars would hold is that error's advice, below.
			meta, metaText, jsonBound, textBound, err = bodiedBounds(b, f, compactCut, compactMost, widest, bodyBound+sep, fenceLen)
			if err != nil {
				return nil, nil, err
			}
		}
		if !sp.fits(jsonBound, textBound) {
			if i == 0 {
				return nil, nil, tooLargef("message %s alone does not fit in %d characters: %s", b.m.ID, sp.limit, narrower(b.m))
			}
			break
		}
		ch, ok, err := readChunk(ctx, b.body, form, b.offset, sp.limit-sp.json-jsonBound, sp.limit-sp.text-textBound)
		if err != nil {
			return nil, nil, err
		}
		sp.take(jsonBound+ch.escaped, textBound+ch.chars)
		o := bodiedMessageJSON{meta, bodyObject(ch, form, ok, f)}
		var tb strings.Builder
		tb.WriteString(metaText)
		writeBodyText(&tb, o.Body, b.m.ID, f)
		out = append(out, o)
		texts = append(texts, tb.String())
		if ch.truncated {
			break
		}
	}
	return out, texts, nil
}
