package api

import (
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
)

// trickyStrings are what appendString must escape exactly as
// encoding/json does.
var trickyStrings = []string{
	"", "plain", `quote " backslash \ slash /`, "<b>Tom & Jerry</b>", "ctl \x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x7f",
	"Jürgen Groß 山田 😀", "sep \u2028 and \u2029 and \u2027\u202a", "bad \xff\xfe utf-8 \xc3", "cut \xe2\x80", "\xed\xa0\x80 surrogate",
	"\ufffd literal", "end\\",
}

// gen builds objects from a few strings and a random source seeded by the
// test: which pointers and slices are nil, which slices are empty, how long
// the others are, and the numbers.
type gen struct {
	strs []string
	rnd  *rand.Rand
}

func (g *gen) bit() bool   { return g.rnd.Uint64()&1 == 1 }
func (g *gen) str() string { return g.strs[g.rnd.IntN(len(g.strs))] }
func (g *gen) int() int64  { return int64(g.rnd.Uint64()) >> g.rnd.IntN(64) }

func (g *gen) strOrNull() *string {
	if g.bit() {
		return nil
	}
	s := g.str()
	return &s
}

// genSlice is nil, empty, or one to three elements.
func genSlice[T any](g *gen, elem func() T) []T {
	if g.bit() {
		return nil
	}
	s := []T{}
	for g.bit() && len(s) < 3 {
		s = append(s, elem())
	}
	return s
}

func (g *gen) address() addressJSON { return addressJSON{Email: g.str(), Name: g.strOrNull()} }

func (g *gen) message() messageJSON {
	m := messageJSON{
		ID: g.str(), ThreadID: g.str(), InboxID: g.str(), Direction: g.str(), Subject: g.strOrNull(), Preview: g.strOrNull(),
		State: g.str(), Environment: g.str(), Simulated: g.bit(), Echo: g.bit(),
		To: genSlice(g, g.address), Cc: genSlice(g, g.address), Bcc: genSlice(g, g.address), ReplyTo: genSlice(g, g.address),
		Recipients: genSlice(g, func() recipientJSON {
			return recipientJSON{Email: g.str(), Type: g.str(), DeliveryStatus: g.strOrNull()}
		}),
		Attachments: genSlice(g, func() attachmentJSON {
			return attachmentJSON{ID: g.strOrNull(), Filename: g.strOrNull(), Bytes: g.int(), ContentType: g.str(), Disposition: g.str(),
				ContentID: g.strOrNull(), ScanStatus: g.str(), Downloadable: g.bit()}
		}),
		CreatedAt: g.str(), BodyAvailable: g.bit(), OriginalRawAvailable: g.bit(), RFCMessageID: g.str(),
		InReplyTo: genSlice(g, g.str), References: genSlice(g, g.str), ThreadMatch: g.str(),
		AddressTag: g.strOrNull(), ParseError: g.strOrNull(), RFCMessageIDGenerated: g.bit(),
	}
	if g.bit() {
		a := g.address()
		m.From = &a
	}
	return m
}

func (g *gen) threadMessage() threadMessageJSON {
	return threadMessageJSON{messageJSON: g.message(), Sequence: g.int(), DeliveryStatus: g.strOrNull()}
}

func (g *gen) thread() threadJSON {
	return threadJSON{ID: g.str(), InboxID: g.str(), Subject: g.strOrNull(), Preview: g.strOrNull(), MessageCount: g.int(),
		LastMessageAt: g.str(), LastMessageDirection: g.str(), CreatedAt: g.str()}
}

func genPage[T any](g *gen, elem func() T) listJSON[T] {
	return listJSON[T]{Data: genSlice(g, elem), NextCursor: g.strOrNull(), HasMore: g.bit()}
}

// sameAsEncodingJSON fails unless writeJSON answers the same for v through
// its fast path (&v) as through encoding/json (v, which is no jsonAppender).
func sameAsEncodingJSON[T any, P interface {
	*T
	jsonAppender
}](t *testing.T, v T) {
	t.Helper()
	if _, ok := any(v).(jsonAppender); ok {
		t.Fatalf("%T is a jsonAppender: the comparison would not reach encoding/json", v)
	}
	fast, slow := httptest.NewRecorder(), httptest.NewRecorder()
	writeJSON(fast, 200, P(&v))
	writeJSON(slow, 200, v)
	if fast.Body.String() != slow.Body.String() {
		t.Fatalf("%T:\nfast          %q\nencoding/json %q", v, fast.Body, slow.Body)
	}
	if fast.Header().Get("Content-Type") != slow.Header().Get("Content-Type") {
		t.Fatalf("Content-Type %q, encoding/json %q", fast.Header().Get("Content-Type"), slow.Header().Get("Content-Type"))
	}
}

func checkObjects(t *testing.T, strs []string, seed uint64) {
	g := &gen{strs: strs, rnd: rand.New(rand.NewPCG(seed, 0))}
	sameAsEncodingJSON(t, g.message())
	sameAsEncodingJSON(t, g.threadMessage())
	sameAsEncodingJSON(t, g.thread())
	sameAsEncodingJSON(t, genPage(g, g.threadMessage))
}

// checkStreamed fails unless s written to a jsonStringWriter in pieces
// (cut where the source says, through Write and WriteString) comes out as
// appendString quotes it whole.
func checkStreamed(t *testing.T, s string, seed uint64) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 1))
	var got strings.Builder
	err := writeJSONString(&got, func(w io.Writer) error {
		for rest := s; rest != ""; {
			n := min(len(rest), 1+rnd.IntN(max(1, min(len(rest), 3*jsonChunk))))
			if rnd.IntN(2) == 0 {
				w.Write([]byte(rest[:n]))
			} else {
				io.WriteString(w, rest[:n])
			}
			rest = rest[n:]
		}
		return nil
	})
	if want := string(appendString(nil, s)); err != nil || got.String() != want {
		t.Fatalf("streamed %q (%v)\nappendString %q", got.String(), err, want)
	}
}

// Every cut of every tricky string: a cut inside a UTF-8 sequence, an
// invalid one or U+2028 must not change a byte.
func TestJSONStringWriterMatchesAppendString(t *testing.T) {
	for _, s := range trickyStrings {
		for i := 0; i <= len(s); i++ {
			for j := i; j <= len(s); j++ {
				var got strings.Builder
				writeJSONString(&got, func(w io.Writer) error {
					w.Write([]byte(s[:i]))
					io.WriteString(w, s[i:j])
					w.Write([]byte(s[j:]))
					return nil
				})
				if want := string(appendString(nil, s)); got.String() != want {
					t.Fatalf("%q cut at %d and %d: %q, want %q", s, i, j, got.String(), want)
				}
			}
		}
	}
	big := strings.Repeat(strings.Join(trickyStrings, ""), 2*jsonChunk/len(strings.Join(trickyStrings, ""))+1)
	for seed := range uint64(20) {
		checkStreamed(t, big, seed)
	}
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	var all strings.Builder
	for c := range 256 {
		all.WriteByte(byte(c))
	}
	for r := rune(0x2000); r < 0x2100; r++ {
		all.WriteRune(r)
	}
	strs := append([]string{all.String()}, trickyStrings...)
	for seed := range uint64(50) {
		checkObjects(t, strs, seed)
	}
}

func FuzzMessageJSON(f *testing.F) {
	for i, s := range trickyStrings {
		f.Add(s, trickyStrings[(i+1)%len(trickyStrings)], "x", uint64(i))
	}
	f.Fuzz(func(t *testing.T, a, b, c string, seed uint64) {
		checkObjects(t, []string{a, b, c}, seed)
		checkStreamed(t, a+b+c, seed)
	})
}
