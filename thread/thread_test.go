package thread

import (
	"fmt"
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

// memFinder is an inbox held in maps: the rules' reference model. The store
// runs the same table against SQLite.
type memFinder struct {
	msgs  map[string]Stored
	links map[string]string
}

func (f *memFinder) Message(id string) (Stored, bool, error) { s, ok := f.msgs[id]; return s, ok, nil }
func (f *memFinder) Link(id string) (string, bool, error)    { t, ok := f.links[id]; return t, ok, nil }

// deliver stores a message in the memFinder the way the store does, and
// returns its thread and match.
func (f *memFinder) deliver(t *testing.T, n *int, own string, irt, refs []string) (string, Match) {
	t.Helper()
	res, err := Assign(f, Input{OwnID: own, Candidates: Candidates(own, irt, refs), Hash: own, Inbound: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate {
		return res.ThreadID, "duplicate"
	}
	if res.ThreadID == "" {
		*n++
		res.ThreadID = fmt.Sprintf("T%d", *n)
	}
	if _, ok := f.msgs[own]; !ok {
		f.msgs[own] = Stored{ThreadID: res.ThreadID, Hash: own}
	}
	for _, l := range res.Links {
		if _, ok := f.links[l]; !ok {
			f.links[l] = res.ThreadID
		}
	}
	delete(f.links, own)
	return res.ThreadID, res.Match
}

func TestAssignRules(t *testing.T) {
	type msg struct {
		own       string
		irt, refs string // space-separated ids
		thread    string // expected thread label, "T1".. in creation order
		match     Match
	}
	split := func(s string) []string { return strings.Fields(s) }
	long := make([]string, 1000)
	for i := range long {
		long[i] = fmt.Sprintf("r%d@x", i)
	}
	tests := []struct {
		name string
		msgs []msg
	}{
		{"reply joins parent", []msg{
			{"a@x", "", "", "T1", MatchNew},
			{"b@x", "a@x", "a@x", "T1", MatchInReplyTo},
			{"c@x", "", "a@x b@x", "T1", MatchReferences},
		}},
		{"in-reply-to wins over conflicting references", []msg{
			{"a@x", "", "", "T1", MatchNew},
			{"b@x", "", "", "T2", MatchNew},
			{"c@x", "a@x", "b@x", "T1", MatchInReplyTo},
		}},
		{"references newest first", []msg{
			{"a@x", "", "", "T1", MatchNew},
			{"b@x", "", "", "T2", MatchNew},
			{"c@x", "", "a@x b@x", "T2", MatchReferences},
		}},
		{"parent arrives after reply", []msg{
			{"b@x", "a@x", "a@x", "T1", MatchNew},
			{"a@x", "", "", "T1", MatchMissingParent},
			{"c@x", "", "", "T2", MatchNew},
		}},
		{"two replies to an unseen message", []msg{
			{"b@x", "a@x", "", "T1", MatchNew},
			{"c@x", "a@x", "", "T1", MatchMissingParent},
		}},
		{"yes token matches stored but never links", []msg{
			{"b@x", "yes", "", "T1", MatchNew},
			{"c@x", "yes", "", "T2", MatchNew},
			{"yes", "", "", "T3", MatchNew},
			{"d@x", "yes", "", "T3", MatchInReplyTo},
		}},
		{"reference loop", []msg{
			{"a@x", "b@x", "", "T1", MatchNew},
			{"b@x", "a@x", "", "T1", MatchInReplyTo},
		}},
		{"self reference", []msg{
			{"a@x", "a@x", "a@x", "T1", MatchNew},
			{"b@x", "", "", "T2", MatchNew},
		}},
		{"very long references", []msg{
			{"r0@x", "", "", "T1", MatchNew},
			{"z@x", "", strings.Join(long, " "), "T1", MatchReferences},
			{"y@x", "", "r999@x", "T1", MatchMissingParent},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &memFinder{msgs: map[string]Stored{}, links: map[string]string{}}
			n := 0
			for _, m := range tt.msgs {
				th, match := f.deliver(t, &n, m.own, split(m.irt), split(m.refs))
				if th != m.thread || match != m.match {
					t.Errorf("%s: got %s/%s, want %s/%s", m.own, th, match, m.thread, m.match)
				}
			}
		})
	}
}

func TestAssignDuplicatesAndEchoes(t *testing.T) {
	f := &memFinder{msgs: map[string]Stored{
		"in@x":  {ThreadID: "T1", Hash: "h1"},
		"out@x": {ThreadID: "T2", Outbound: true},
	}, links: map[string]string{}}
	tests := []struct {
		own, hash string
		want      Result
	}{
		{"in@x", "h1", Result{Duplicate: true, ThreadID: "T1"}},
		{"in@x", "h2", Result{ThreadID: "T1", Match: MatchSameMessageID}},
		{"out@x", "h3", Result{ThreadID: "T2", Match: MatchEcho, Echo: true}},
	}
	for _, tt := range tests {
		got, err := Assign(f, Input{OwnID: tt.own, Hash: tt.hash, Inbound: true})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s/%s: got %+v, want %+v", tt.own, tt.hash, got, tt.want)
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
