package thread

import (
	"reflect"
	"strings"
	"testing"
)

func TestExtractIDs(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"plain", []string{"<a@b>"}, []string{"a@b"}},
		{"several folded", []string{"<a@b>\r\n <c@d>\t<e@f>"}, []string{"a@b", "c@d", "e@f"}},
		{"commas", []string{"<a@b>, <c@d>,<e@f>"}, []string{"a@b", "c@d", "e@f"}},
		{"prose", []string{`Your message of "Mon" <a@b> (sent by x)`}, []string{"a@b"}},
		{"git yes token", []string{"<yes> <a@b>"}, []string{"yes", "a@b"}},
		{"no at", []string{"<12345.local>"}, []string{"12345.local"}},
		{"empty tokens", []string{"<> < > <a@b>"}, []string{"a@b"}},
		{"spaces inside", []string{"< a@b >"}, []string{"a@b"}},
		{"nested open", []string{"<<a@b>>"}, []string{"a@b"}},
		{"unclosed", []string{"<a@b> <c@d"}, []string{"a@b"}},
		{"several headers", []string{"<a@b>", "<c@d>"}, []string{"a@b", "c@d"}},
		{"none", []string{"bare@id"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExtractIDs(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ExtractIDs(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestOwnID(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"<a@b>"}, "a@b"},
		{[]string{"junk <a@b> <c@d>"}, "a@b"},
		{[]string{" bare@id "}, "bare@id"},
		{[]string{"two words"}, ""},
		{nil, ""},
		{[]string{"", "<x@y>"}, "x@y"},
	}
	for _, tt := range tests {
		if got := OwnID(tt.in); got != tt.want {
			t.Errorf("OwnID(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCandidatesOrder(t *testing.T) {
	got := Candidates("self@x", []string{"p@x"}, []string{"r1@x", "p@x", "self@x", "r3@x"})
	want := []Candidate{{"p@x", true}, {"r3@x", false}, {"r1@x", false}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Candidates = %v, want %v", got, want)
	}
}

// memFinder is an inbox held in maps, for rules the shared model does not
// cover (outbound messages).
type memFinder struct {
	msgs   map[string]Stored
	copies map[[2]string]Stored // by own id and digest
	links  map[string]string
}

func (f *memFinder) Message(id string) (Stored, bool, error) { s, ok := f.msgs[id]; return s, ok, nil }
func (f *memFinder) Copy(id, hash string) (Stored, bool, error) {
	s, ok := f.copies[[2]string{id, hash}]
	return s, ok, nil
}
func (f *memFinder) Link(id string) (string, bool, error) { t, ok := f.links[id]; return t, ok, nil }

func TestAssignDuplicatesAndEchoes(t *testing.T) {
	f := &memFinder{msgs: map[string]Stored{
		"in@x":  {MessageID: "M1", ThreadID: "T1"},
		"out@x": {MessageID: "M3", ThreadID: "T2", Outbound: true},
	}, copies: map[[2]string]Stored{
		{"in@x", "h1"}:  {MessageID: "M1", ThreadID: "T1"},
		{"in@x", "h2"}:  {MessageID: "M2", ThreadID: "T1"}, // a second, different copy
		{"out@x", "h4"}: {MessageID: "M4", ThreadID: "T2"}, // an echo already stored
	}, links: map[string]string{}}
	tests := []struct {
		own, hash string
		keep      bool
		want      Result
	}{
		{"in@x", "h1", false, Result{Duplicate: true, MessageID: "M1", ThreadID: "T1"}},
		// A retry of the second copy is a duplicate of that copy.
		{"in@x", "h2", false, Result{Duplicate: true, MessageID: "M2", ThreadID: "T1"}},
		{"in@x", "h5", false, Result{ThreadID: "T1", Match: MatchSameMessageID}},
		// --store-duplicates: stored like any other copy of the id.
		{"in@x", "h1", true, Result{ThreadID: "T1", Match: MatchSameMessageID}},
		{"out@x", "h3", false, Result{ThreadID: "T2", Match: MatchEcho, Echo: true}},
		{"out@x", "h4", false, Result{Duplicate: true, MessageID: "M4", ThreadID: "T2"}},
	}
	for _, tt := range tests {
		got, err := Assign(f, Input{OwnID: tt.own, Hash: tt.hash, Inbound: true, KeepDuplicates: tt.keep})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s/%s keep=%v: got %+v, want %+v", tt.own, tt.hash, tt.keep, got, tt.want)
		}
	}
}

func FuzzExtractIDs(f *testing.F) {
	for _, s := range []string{"<a@b>", "<a@b>, <c@d>", "junk <yes> <<x>>", "<", ">", "<a@b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := ExtractIDs([]string{s})
		for _, id := range ids {
			if id == "" || strings.ContainsAny(id, "<>") || strings.TrimSpace(id) != id {
				t.Fatalf("bad id %q from %q", id, s)
			}
			if !strings.Contains(s, id) {
				t.Fatalf("id %q not in input %q", id, s)
			}
		}
		// Extraction is stable: re-extracting the bracketed ids gives them back.
		var b strings.Builder
		for _, id := range ids {
			b.WriteString("<" + id + ">")
		}
		if again := ExtractIDs([]string{b.String()}); !reflect.DeepEqual(again, ids) {
			t.Fatalf("re-extract %q: got %q want %q", b.String(), again, ids)
		}
		_ = OwnID([]string{s})
	})
}
